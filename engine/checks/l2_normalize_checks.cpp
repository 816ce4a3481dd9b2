#include <cmath>

#include "engine/checks/checks.h"

namespace nce::checks {

// Rows of several ranks with the default eps, and one case where eps is large enough that
// a row lies below it (at half of eps, so finite differences stay on that side), which
// checks the dL/dy / eps branch of the backward too.
void add_l2_normalize_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        double eps;
        double first_row_norm;  // row 0 is rescaled to this norm; 0 leaves it as drawn
    };
    for (const Case& c : {Case{"x [5], one row", {5}, 1e-12, 0},
                          Case{"x [3,4]", {3, 4}, 1e-12, 0},
                          Case{"x [2,3,5], rows over two axes", {2, 3, 5}, 1e-12, 0},
                          Case{"x [3,4], eps 0.1, row 0 norm 0.05", {3, 4}, 0.1, 0.05}}) {
        registry.add({"l2_normalize", c.description,
                      [c](Generator& g, Dtype) {
                          std::vector<double> values = normal(g, c.x).to_vector();
                          size_t row_length = static_cast<size_t>(c.x.back());
                          if (c.first_row_norm > 0) {
                              double squared_norm = 0;
                              for (size_t i = 0; i < row_length; ++i) squared_norm += values[i] * values[i];
                              for (size_t i = 0; i < row_length; ++i) values[i] *= c.first_row_norm / std::sqrt(squared_norm);
                          }
                          return std::vector<Tensor>{Tensor::from_vector(values, c.x, Dtype::Float64)};
                      },
                      [eps = c.eps](const std::vector<Var>& x) { return l2_normalize(x[0], eps); },
                      {}});
    }
}

}  // namespace nce::checks
