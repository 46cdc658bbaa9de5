// The headers' version (KJIT_VERSION...) and the library's (kjit::version()) agree (docs/ABI.md).
#include "test_support.hpp"

#include <string>

#include "kjit/info.hpp"
#include "kjit/version.hpp"

TEST_CASE("KJIT_VERSION, KJIT_VERSION_STRING and kjit::version() agree", "[version]") {
    CHECK(KJIT_VERSION == KJIT_VERSION_MAJOR * 10000 + KJIT_VERSION_MINOR * 100 + KJIT_VERSION_PATCH);
    CHECK(kjit::version_number() == KJIT_VERSION);
    const std::string spelled = std::to_string(KJIT_VERSION_MAJOR) + "." + std::to_string(KJIT_VERSION_MINOR) + "." +
                                std::to_string(KJIT_VERSION_PATCH);
    CHECK(std::string(KJIT_VERSION_STRING) == spelled);
    CHECK(std::string(kjit::version()) == spelled);
    CHECK(std::string(kjit::version_string) == spelled);
    CHECK(kjit::system_info().kjit_version == spelled);
}
