// The list of op worked examples (op_worked_example.h says how to add one). Each is defined
// in its own engine/worked_examples/<name>_example.cpp.
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

OpWorkedExample matmul_worked_example();
OpWorkedExample matmul_transposed_worked_example();
OpWorkedExample matmul_broadcast_worked_example();
OpWorkedExample softmax_worked_example();
OpWorkedExample log_softmax_worked_example();
OpWorkedExample cross_entropy_worked_example();
OpWorkedExample layer_norm_worked_example();
OpWorkedExample gelu_worked_example();
OpWorkedExample gelu_tanh_worked_example();
OpWorkedExample masked_mean_pool_worked_example();
OpWorkedExample l2_normalize_worked_example();
OpWorkedExample l2_normalize_eps_worked_example();
OpWorkedExample attention_worked_example();
OpWorkedExample packed_attention_worked_example();
OpWorkedExample dropout_worked_example();
OpWorkedExample sum_worked_example();
OpWorkedExample mean_worked_example();
OpWorkedExample max_worked_example();
OpWorkedExample broadcast_add_worked_example();
OpWorkedExample broadcast_mul_worked_example();

const std::vector<OpWorkedExample>& op_worked_examples() {
    static const std::vector<OpWorkedExample> examples = {
        matmul_worked_example(),
        matmul_transposed_worked_example(),
        matmul_broadcast_worked_example(),
        softmax_worked_example(),
        log_softmax_worked_example(),
        cross_entropy_worked_example(),
        layer_norm_worked_example(),
        gelu_worked_example(),
        gelu_tanh_worked_example(),
        masked_mean_pool_worked_example(),
        l2_normalize_worked_example(),
        l2_normalize_eps_worked_example(),
        attention_worked_example(),
        packed_attention_worked_example(),
        dropout_worked_example(),
        sum_worked_example(),
        mean_worked_example(),
        max_worked_example(),
        broadcast_add_worked_example(),
        broadcast_mul_worked_example(),
    };
    return examples;
}

}  // namespace nce::worked_examples
