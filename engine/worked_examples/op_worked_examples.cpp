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
    };
    return examples;
}

}  // namespace nce::worked_examples
