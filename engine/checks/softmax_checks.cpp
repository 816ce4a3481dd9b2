#include "engine/checks/checks.h"

namespace nce::checks {

void add_softmax_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape shape;
        double scale;  // logits of larger magnitude make peaked rows
    };
    for (const Case& c : {Case{"[4,5]", {4, 5}, 1.0}, Case{"[2,3,4]", {2, 3, 4}, 1.0},
                          Case{"[3,6] peaked (logits x 4)", {3, 6}, 4.0}, Case{"[5] one row", {5}, 1.0}}) {
        auto make_inputs = [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.shape) * c.scale}; };
        registry.add({"softmax", c.description, make_inputs,
                      [](const std::vector<Var>& x) { return softmax(x[0]); }, /*constant_inputs=*/{}});
        registry.add({"log_softmax", c.description, make_inputs,
                      [](const std::vector<Var>& x) { return log_softmax(x[0]); }, /*constant_inputs=*/{}});
    }
}

}  // namespace nce::checks
