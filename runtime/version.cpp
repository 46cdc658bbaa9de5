#include "kjit/version.hpp"

#include <string>

namespace kjit {

// KJIT_VERSION_STRING spelled out from the three numbers, so that the two cannot disagree.
#define KJIT_STR_(x) #x
#define KJIT_STR(x) KJIT_STR_(x)
static_assert(std::char_traits<char>::compare(KJIT_VERSION_STRING,
                                              KJIT_STR(KJIT_VERSION_MAJOR) "." KJIT_STR(KJIT_VERSION_MINOR) "." KJIT_STR(
                                                  KJIT_VERSION_PATCH),
                                              sizeof(KJIT_VERSION_STRING)) == 0,
              "KJIT_VERSION_STRING disagrees with KJIT_VERSION_MAJOR/MINOR/PATCH");

const char* version() noexcept { return KJIT_VERSION_STRING; }
int version_number() noexcept { return KJIT_VERSION; }

}  // namespace kjit
