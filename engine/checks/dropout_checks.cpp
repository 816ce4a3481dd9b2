#include "engine/checks/checks.h"

namespace nce::checks {

void add_dropout_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape shape;
        double p;
    };
    for (const Case& c : {Case{"[4,5], p = 0.3", {4, 5}, 0.3}, Case{"[2,3,4], p = 0.5", {2, 3, 4}, 0.5},
                          Case{"[12], p = 0.8", {12}, 0.8}}) {
        registry.add({"dropout", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.shape)}; },
                      [p = c.p](const std::vector<Var>& x) {
                          // A fresh generator with a fixed seed on every call: every evaluation
                          // of the finite differences sees the same mask.
                          Generator mask_generator(7);
                          return dropout(x[0], p, mask_generator, /*training=*/true);
                      },
                      /*constant_inputs=*/{}});
    }
    // relu_dropout: inputs kept away from relu's kink, where finite differences would
    // straddle it.
    for (const Case& c : {Case{"[4,5], p = 0.3, |x| >= 0.1", {4, 5}, 0.3},
                          Case{"[2,3,4], p = 0.5, |x| >= 0.1", {2, 3, 4}, 0.5}}) {
        registry.add({"relu_dropout", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{away_from_zero(g, c.shape)}; },
                      [p = c.p](const std::vector<Var>& x) {
                          Generator mask_generator(7);
                          return relu_dropout(x[0], p, mask_generator, /*training=*/true);
                      },
                      /*constant_inputs=*/{}});
    }
}

}  // namespace nce::checks
