// Small helpers shared by the test files.
#pragma once
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

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

// A file in the temporary folder holding `contents`, removed when the object goes; the name
// ends in `extension` (readers that tell formats apart by it).
class TemporaryFile {
public:
    explicit TemporaryFile(const std::string& contents, const std::string& extension = ".txt") {
        static int files_made = 0;
        path_ = (std::filesystem::temp_directory_path() /
                 ("nce_test_" + std::to_string(::getpid()) + "_" + std::to_string(files_made++) + extension))
                    .string();
        std::ofstream(path_, std::ios::binary) << contents;
    }
    ~TemporaryFile() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    TemporaryFile(const TemporaryFile&) = delete;
    TemporaryFile& operator=(const TemporaryFile&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A fresh directory under the temporary folder, removed with everything in it when the
// object goes.
class TemporaryDirectory {
public:
    TemporaryDirectory() {
        std::string pattern = (std::filesystem::temp_directory_path() / "nce_test_XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

    // The path of `name` inside the directory.
    std::string file(const std::string& name) const { return (path / name).string(); }
    // The names of what the directory holds, sorted.
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(path)) names.push_back(entry.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }

    std::filesystem::path path;
};

// A loss over leaves (the inputs in order), for comparing a loss's hand-written backward
// with the same loss composed from engine ops or with finite differences.
using LossFunction = std::function<Var(const std::vector<Var>&)>;

struct LossAndGrads {
    Tensor loss;
    std::vector<Tensor> grads;  // one per input, in order
};

// Runs f on fresh leaves holding copies of `inputs` and back-propagates from its loss.
inline LossAndGrads evaluate_loss(const LossFunction& f, const std::vector<Tensor>& inputs) {
    std::vector<Var> leaves;
    for (const Tensor& input : inputs) leaves.push_back(Var::parameter(input.clone()));
    Var loss = f(leaves);
    loss.backward();
    LossAndGrads result{loss.value(), {}};
    for (const Var& leaf : leaves) result.grads.push_back(leaf.grad());
    return result;
}

}  // namespace nce::testing
