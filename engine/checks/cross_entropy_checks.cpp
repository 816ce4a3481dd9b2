#include "engine/checks/checks.h"

namespace nce::checks {

void add_cross_entropy_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        int64_t rows, classes;
        std::vector<int64_t> targets;
        double scale;  // logits of larger magnitude make confident rows
    };
    for (const Case& c : {Case{"logits [4,5], targets [4]", 4, 5, {0, 4, 2, 2}, 1.0},
                          Case{"logits [6,3], targets [6]", 6, 3, {1, 0, 2, 1, 1, 0}, 1.0},
                          Case{"logits [1,7], one row", 1, 7, {6}, 1.0},
                          Case{"logits [3,4] x 5, confident", 3, 4, {3, 1, 0}, 5.0}}) {
        Tensor targets = Tensor::from_indices(c.targets, {c.rows});
        registry.add({"cross_entropy", c.description,
                      [c](Generator& g, Dtype) {
                          return std::vector<Tensor>{normal(g, {c.rows, c.classes}) * c.scale};
                      },
                      [targets](const std::vector<Var>& x) { return cross_entropy(x[0], targets); },
                      /*constant_inputs=*/{}});
    }
}

}  // namespace nce::checks
