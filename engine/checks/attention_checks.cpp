#include "engine/checks/checks.h"

namespace nce::checks {

// q [B,H,Tq,dh], k and v [B,H,Tk,dh], with and without a key padding mask; the mask is
// built in the checked dtype inside the function from a fixed pattern, so it is a constant.
void add_attention_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape queries, keys;
        std::vector<double> key_mask;  // [B, Tk], row-major: 1 = real key, 0 = padding; empty = no mask
    };
    const std::vector<Case> cases{
        {"q [1,1,3,4] k,v [1,1,5,4]", {1, 1, 3, 4}, {1, 1, 5, 4}, {}},
        // Entry 0 keeps keys 0-2 of 5, entry 1 all 5; 3 heads.
        {"q [2,3,2,4] k,v [2,3,5,4] masked", {2, 3, 2, 4}, {2, 3, 5, 4}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1}},
        // More queries than keys; entry 0 keeps keys {0, 2}, entry 1 keys {1, 2}.
        {"q [2,2,4,3] k,v [2,2,3,3] masked", {2, 2, 4, 3}, {2, 2, 3, 3}, {1, 0, 1, 0, 1, 1}},
        {"q [2,2,3,2] k,v [2,2,4,2]", {2, 2, 3, 2}, {2, 2, 4, 2}, {}},
    };
    for (const Case& c : cases) {
        registry.add({"attention", c.description,
                      [c](Generator& g, Dtype) {
                          return std::vector<Tensor>{normal(g, c.queries), normal(g, c.keys), normal(g, c.keys)};
                      },
                      [c](const std::vector<Var>& x) {
                          Tensor key_padding_mask;
                          if (!c.key_mask.empty())
                              key_padding_mask =
                                  Tensor::from_vector(c.key_mask, {c.keys[0], c.keys[2]}, x[0].dtype());
                          return scaled_dot_product_attention(x[0], x[1], x[2], key_padding_mask);
                      },
                      {}});
    }

    // packed_attention: qkv [B, T, 3D] with and without a mask, with and without dropout.
    // Each evaluation draws its dropout mask from a fresh generator with the same seed, so
    // the mask is a constant of the function, as finite differences need.
    struct PackedCase {
        const char* description;
        Shape qkv;
        int64_t heads;
        double dropout;
        std::vector<double> key_mask;  // [B, T] row-major, 1 = real key; empty = no mask
    };
    const std::vector<PackedCase> packed_cases{
        {"qkv [1,3,12] 2 heads", {1, 3, 12}, 2, 0.0, {}},
        {"qkv [2,4,12] 2 heads masked", {2, 4, 12}, 2, 0.0, {1, 1, 0, 0, 1, 1, 1, 1}},
        {"qkv [2,5,18] 3 heads dropout 0.3 masked", {2, 5, 18}, 3, 0.3, {1, 0, 1, 1, 0, 1, 1, 1, 1, 1}},
        {"qkv [1,4,6] 1 head dropout 0.5", {1, 4, 6}, 1, 0.5, {}},
    };
    for (const PackedCase& c : packed_cases) {
        registry.add({"packed_attention", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.qkv)}; },
                      [c](const std::vector<Var>& x) {
                          Tensor key_padding_mask;
                          if (!c.key_mask.empty())
                              key_padding_mask = Tensor::from_vector(c.key_mask, {c.qkv[0], c.qkv[1]}, x[0].dtype());
                          Generator dropout_generator(41);
                          return packed_attention(x[0], key_padding_mask, c.heads, c.dropout, &dropout_generator);
                      },
                      {}});
    }
}

}  // namespace nce::checks
