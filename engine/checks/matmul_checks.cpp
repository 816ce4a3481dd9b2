#include "engine/checks/checks.h"

namespace nce::checks {

void add_matmul_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape a, b;
        Transpose transpose;
    };
    for (const Case& c : {Case{"[3,4] · [4,5]", {3, 4}, {4, 5}, Transpose::None},
                          Case{"[3,4] · [5,4]^T", {3, 4}, {5, 4}, Transpose::Second},
                          Case{"[4,3]^T · [4,5]", {4, 3}, {4, 5}, Transpose::First},
                          Case{"[4,3]^T · [5,4]^T", {4, 3}, {5, 4}, Transpose::Both},
                          Case{"[2,3,4] · [2,4,2] batched", {2, 3, 4}, {2, 4, 2}, Transpose::None},
                          Case{"[2,3,4] · [5,4]^T shared", {2, 3, 4}, {5, 4}, Transpose::Second},
                          Case{"[3,4] · [2,4,2] shared", {3, 4}, {2, 4, 2}, Transpose::None}}) {
        registry.add({"matmul", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.a), normal(g, c.b)}; },
                      [t = c.transpose](const std::vector<Var>& x) { return matmul(x[0], x[1], t); },
                      {}});
    }
    // affine: x W^T + b.
    for (int64_t rows : {1, 5}) {
        registry.add({"affine", fmt::format("[{},4] · [3,4]^T + [3]", rows),
                      [rows](Generator& g, Dtype) {
                          return std::vector<Tensor>{normal(g, {rows, 4}), normal(g, {3, 4}), normal(g, {3})};
                      },
                      [](const std::vector<Var>& x) { return affine(x[0], x[1], x[2]); },
                      {}});
    }
}

}  // namespace nce::checks
