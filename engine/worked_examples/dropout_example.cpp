// dropout's worked example (docs/derivations/ops/dropout.md): x [2, 3] with p = 0.5 and a
// generator seeded 42 at offset 0. The steps draw the mask from random_bits themselves, the
// way random.h defines a Bernoulli fill; the op draws it inside its kernel in the forward and
// draws it again in the backward, and the closed form dx with this mask equals the backward.
#include <cmath>
#include <cstdint>

#include "engine/ops.h"
#include "engine/random.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

constexpr double kDropProbability = 0.5;
constexpr uint64_t kSeed = 42;
constexpr uint64_t kOffset = 0;  // a fresh generator: the forward's draws start at 0

}  // namespace

// y = x ⊙ M / (1 - p)     x, M, y, W: [2, 3]   M_i = 1 with probability 1 - p
OpWorkedExample dropout_worked_example() {
    OpWorkedExample example;
    example.name = "dropout";
    example.parameters = {{"p", "0.5"}, {"seed", "42"}, {"offset", "0"}, {"training", "true"}};
    example.inputs = {{"x", float64_matrix({{1.0, 2.0, 3.0}, {-1.0, 0.5, 4.0}})}};
    example.upstream = float64_matrix({{1.0, -1.0, 2.0}, {0.5, 3.0, -2.0}});
    example.forward = [](const std::vector<Var>& inputs) {
        Generator generator(kSeed);  // offset 0; the op takes 6 draws and moves it to 6
        return dropout(inputs[0], kDropProbability, generator, /*training=*/true);
    };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        const double keep = 1 - kDropProbability;
        // Element i takes 32 bits of draw offset + i/2: the high half for an even i, the low
        // half for an odd one; it is kept when that half is below ceil(keep · 2^32).
        const auto threshold = static_cast<uint64_t>(std::ceil(keep * 0x1.0p32));
        std::vector<double> uniforms, mask;
        for (int64_t i = 0; i < x.numel(); ++i) {
            const uint64_t draw = random_bits::bits(kSeed, kOffset + static_cast<uint64_t>(i) / 2);
            const uint64_t half = i % 2 == 0 ? draw >> 32 : draw & 0xffffffffULL;
            uniforms.push_back(static_cast<double>(half) * 0x1.0p-32);
            mask.push_back(half < threshold ? 1.0 : 0.0);
        }
        Tensor u = Tensor::from_vector(uniforms, x.shape(), Dtype::Float64);  // [2, 3] in [0, 1)
        Tensor M = Tensor::from_vector(mask, x.shape(), Dtype::Float64);      // [2, 3]
        return {{"u", "half of bits(seed, offset + i/2) / 2^32   (high half for even i)", u},
                {"M", "1 where u < 1 - p, else 0", M},
                {"Y", "x ⊙ M / (1 - p)", x * M / keep},
                {"dx", "W ⊙ M / (1 - p)   (the same M, drawn again)", W * M / keep}};
    };
    return example;
}

}  // namespace nce::worked_examples
