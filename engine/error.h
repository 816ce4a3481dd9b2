// One exception type for every error a user can cause: its message is a single line that
// names the op, input, shape or file at fault and, where there is one, the fix.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <string>

namespace nce {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace nce

// NCE_CHECK(condition, "fmt string", args...): throws nce::Error with the formatted message.
#define NCE_CHECK(condition, ...)              \
    do {                                       \
        if (!(condition)) ::nce::fail(__VA_ARGS__); \
    } while (0)
