#include "engine/checks/checks.h"

namespace nce::checks {

// The indices are data, not an input of the checked function: each case captures its own.
// Every case repeats an index, so the backward must add, not overwrite, into a table row.
void add_index_select_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape table;
        std::vector<int64_t> indices;
        Shape indices_shape;
    };
    for (const Case& c : {Case{"table [5,3], indices [0,2,2,1]", {5, 3}, {0, 2, 2, 1}, {4}},
                          Case{"table [4,2,3], indices [[3,0],[3,3]]", {4, 2, 3}, {3, 0, 3, 3}, {2, 2}},
                          Case{"table [6], indices [5,0,5]", {6}, {5, 0, 5}, {3}}}) {
        registry.add({"index_select", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.table)}; },
                      [indices = Tensor::from_indices(c.indices, c.indices_shape)](const std::vector<Var>& x) {
                          return index_select(x[0], indices);
                      }});
    }
    // index_add, index_select's adjoint: rows named twice, and a row that no index names.
    struct AddCase {
        const char* description;
        Shape source;
        std::vector<int64_t> indices;
        int64_t rows;
    };
    for (const AddCase& c : {AddCase{"source [4,3] into 5 rows, indices [0,2,2,4]", {4, 3}, {0, 2, 2, 4}, 5},
                             AddCase{"source [3] into 4 rows, indices [3,3,0]", {3}, {3, 3, 0}, 4}}) {
        registry.add({"index_add", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.source)}; },
                      [rows = c.rows, indices = Tensor::from_indices(c.indices, {static_cast<int64_t>(c.indices.size())})](
                          const std::vector<Var>& x) { return index_add(x[0], indices, rows); }});
    }
}

}  // namespace nce::checks
