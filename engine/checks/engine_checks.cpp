#include "engine/checks/checks.h"

namespace nce {

namespace checks {

Tensor away_from_zero(Generator& generator, const Shape& shape, double margin) {
    std::vector<double> values = generator.normal(shape, Dtype::Float64).to_vector();
    for (double& v : values) v = v >= 0 ? v + margin : v - margin;
    return Tensor::from_vector(values, shape, Dtype::Float64);
}

}  // namespace checks

void register_engine_checks(CheckRegistry& registry) {
    checks::add_matmul_checks(registry);
    checks::add_elementwise_checks(registry);
    checks::add_unary_checks(registry);
    checks::add_reduce_checks(registry);
    checks::add_shape_checks(registry);
    checks::add_index_select_checks(registry);
    checks::add_softmax_checks(registry);
    checks::add_cross_entropy_checks(registry);
    checks::add_layer_norm_checks(registry);
    checks::add_dropout_checks(registry);
    checks::add_masked_mean_pool_checks(registry);
    checks::add_l2_normalize_checks(registry);
    checks::add_attention_checks(registry);
}

}  // namespace nce
