// Entry point groups (jit/kernels/entry_groups.hpp): names per group in one string, within the limits.
#include "test_support.hpp"

#include "jit/kernels/entry_groups.hpp"
#include "kjit/error.hpp"

using kjit::jit::kernels::EntryGroups;

TEST_CASE("entry point groups keep each group's names in order, NUL-terminated, within the limits", "[entry_groups]") {
    EntryGroups g(3);
    CHECK(g.size() == 3);
    CHECK(g.empty(0));
    CHECK(g.count(7) == 0);  // past the groups: none
    g.add(1, "k_contiguous32_a_name_longer_than_a_short_string");
    g.add(1, "k_finish");
    g.add(2, "k_small32");
    CHECK(g.empty(0));
    CHECK(g.count(1) == 2);
    CHECK(std::string(g.name(1, 0)) == "k_contiguous32_a_name_longer_than_a_short_string");
    CHECK(std::string(g.name(1, 1)) == "k_finish");
    CHECK(std::string(g.name(2, 0)) == "k_small32");
    CHECK(g.names(1) == std::vector<std::string>{"k_contiguous32_a_name_longer_than_a_short_string", "k_finish"});
    CHECK_THROWS_AS(g.add(1, "third"), kjit::Error);
    CHECK_THROWS_AS(g.add(3, "no such group"), kjit::Error);
    CHECK_THROWS_AS(g.add(0, std::string_view("a\0b", 3)), kjit::Error);
    CHECK(g.empty(0));  // a refused name leaves nothing behind

    const EntryGroups from_lists({{}, {"a", "b"}, {"c"}});
    CHECK(from_lists.size() == 3);
    CHECK(from_lists.names(1) == std::vector<std::string>{"a", "b"});
    CHECK(std::string(from_lists.name(2, 0)) == "c");
    CHECK_NOTHROW(EntryGroups(EntryGroups::kMaxGroups));
    CHECK_THROWS_AS(EntryGroups(EntryGroups::kMaxGroups + 1), kjit::Error);
    CHECK_THROWS_AS(EntryGroups(std::vector<std::vector<std::string>>{{"a", "b", "c"}}), kjit::Error);
}
