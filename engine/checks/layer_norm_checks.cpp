#include "engine/checks/checks.h"

namespace nce::checks {

void add_layer_norm_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        int64_t width;  // D, the last axis of x
        double offset;  // added to x: layer norm must remove it
    };
    for (const Case& c : {Case{"x [3,5], weight and bias [5]", {3, 5}, 5, 0.0},
                          Case{"x [2,3,4], weight and bias [4]", {2, 3, 4}, 4, 0.0},
                          Case{"x [4,6] + 3, weight and bias [6]", {4, 6}, 6, 3.0}}) {
        registry.add({"layer_norm", c.description,
                      [c](Generator& g, Dtype) {
                          return std::vector<Tensor>{normal(g, c.x) + c.offset, normal(g, {c.width}),
                                                     normal(g, {c.width})};
                      },
                      [](const std::vector<Var>& x) { return layer_norm(x[0], x[1], x[2]); }, /*constant_inputs=*/{}});
    }
}

}  // namespace nce::checks
