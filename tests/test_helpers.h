// Small helpers shared by the test files.
#pragma once
#include <doctest/doctest.h>

#include "engine/nce.h"

namespace nce::testing {

// Both dtypes, for tests that run in each.
inline const Dtype kFloatDtypes[] = {Dtype::Float64, Dtype::Float32};

// Tolerance for comparing a computed value with a reference in the given dtype.
inline double tolerance_for(Dtype dtype) { return dtype == Dtype::Float64 ? 1e-12 : 1e-5; }

// Asserts that `statement` throws nce::Error whose message contains `fragment`.
#define CHECK_ERROR_MENTIONS(statement, fragment)                                        \
    do {                                                                                \
        bool thrown_ = false;                                                           \
        try {                                                                           \
            statement;                                                                  \
        } catch (const ::nce::Error& error_) {                                          \
            thrown_ = true;                                                             \
            CHECK_MESSAGE(std::string(error_.what()).find(fragment) != std::string::npos, \
                          "message was: " << error_.what());                            \
        }                                                                               \
        CHECK_MESSAGE(thrown_, "expected an nce::Error mentioning " << fragment);       \
    } while (0)

}  // namespace nce::testing
