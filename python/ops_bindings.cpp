// Every op of engine/ops.h under its own name and with its own parameters. Inputs may be
// Vars (gradients flow through them) or anything array-like (constants); masks, indices and
// targets are tensors. Shape and parameter errors are the engine's one-line ValueErrors.
// Each docstring gives the shapes, the forward, the backward in one line, and where the
// backward is derived: a page of docs/derivations/ops/, or the comment above the op's
// backward in engine/ops/.
//
//   y = nce.matmul(a, b, transpose="second")     # a · b^T
//   s = nce.sum(x, axis=1, keepdim=True)
#include <optional>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

// An optional tensor argument: None gives an undefined tensor (no mask).
Tensor optional_tensor(const ArrayLike& value) { return value.object.is_none() ? Tensor() : value.tensor(); }

Transpose parse_transpose(const std::string& name) {
    if (name == "none") return Transpose::None;
    if (name == "first") return Transpose::First;
    if (name == "second") return Transpose::Second;
    if (name == "both") return Transpose::Both;
    fail("matmul: transpose must be one of none, first, second, both; got '{}'", name);
}

GeluApproximation parse_gelu(const std::string& name) {
    if (name == "erf") return GeluApproximation::Erf;
    if (name == "tanh") return GeluApproximation::Tanh;
    fail("gelu: approximation must be erf or tanh; got '{}'", name);
}

std::vector<Var> var_list(const py::sequence& parts) {
    std::vector<Var> vars;
    for (py::handle part : parts) vars.push_back(var_from_python(part));
    return vars;
}

// Reductions: axis None reduces every element to a scalar.
template <typename Whole, typename Along>
Var reduce(const VarLike& x, std::optional<int64_t> axis, bool keepdim, Whole whole, Along along) {
    if (!axis) return whole(x.var());
    return along(x.var(), *axis, keepdim);
}

}  // namespace

void bind_ops(py::module_& m) {
    using py::arg;
    m.def("matmul", [](const VarLike& a, const VarLike& b, const std::string& transpose) {
        return matmul(a.var(), b.var(), parse_transpose(transpose));
    }, arg("a"), arg("b"), arg("transpose") = "none",
       "y = a · b: a [m, k], b [k, n] -> [m, n], or batched [..., m, k] · [..., k, n]; transpose: none, first "
       "(a^T), second (b^T) or both.\n"
       "Backward: da = dy · b^T, db = a^T · dy. Derived in docs/derivations/ops/matmul.md.");
    m.def("affine", [](const VarLike& x, const VarLike& weight, const VarLike& bias) {
        return affine(x.var(), weight.var(), bias.var());
    }, arg("x"), arg("weight"), arg("bias"),
       "y = x · weight^T + bias: x [N, in], weight [out, in], bias [out] -> [N, out] (PyTorch's Linear).\n"
       "Backward: dx = dy · weight, dweight = dy^T · x, dbias = sum of dy over rows. Derived in "
       "docs/derivations/ops/matmul.md; engine/ops/affine.cpp.");
    m.def("packed_attention", [](const VarLike& qkv, const ArrayLike& mask, int64_t heads, double dropout,
                                 Generator* generator) {
        return packed_attention(qkv.var(), mask.tensor(), heads, dropout, generator);
    }, arg("qkv"), arg("keep_mask"), arg("heads"), arg("dropout") = 0.0, arg("generator") = nullptr,
       "Multi-head self-attention on packed projections: qkv [B, T, 3D] -> [B, T, D], D = heads · dh. keep_mask "
       "[B, T]: nonzero = a real token, kept (the opposite of PyTorch's key_padding_mask, where True = padding: "
       "pass ~mask).\nBackward: the softmax's Jacobian per row through the scores, then the two matmuls. Derived in "
       "docs/derivations/ops/attention.md.");

    m.def("add", [](const VarLike& a, const VarLike& b) { return add(a.var(), b.var()); }, arg("a"), arg("b"),
          "a + b. Shapes broadcast as NumPy's do."
          "\nBackward: da = dy, db = dy, each summed over the axes it was broadcast along. "
          "engine/ops/elementwise.cpp.");
    m.def("sub", [](const VarLike& a, const VarLike& b) { return sub(a.var(), b.var()); }, arg("a"), arg("b"),
          "a - b. Shapes broadcast as NumPy's do."
          "\nBackward: da = dy, db = -dy, each summed over its broadcast axes. engine/ops/elementwise.cpp.");
    m.def("mul", [](const VarLike& a, const VarLike& b) { return mul(a.var(), b.var()); }, arg("a"), arg("b"),
          "a * b, elementwise. Shapes broadcast as NumPy's do."
          "\nBackward: da = dy * b, db = dy * a, each summed over its broadcast axes. engine/ops/elementwise.cpp.");
    m.def("div", [](const VarLike& a, const VarLike& b) { return div(a.var(), b.var()); }, arg("a"), arg("b"),
          "a / b, elementwise. Shapes broadcast as NumPy's do."
          "\nBackward: da = dy / b, db = -dy * a / b^2, each summed over its broadcast axes. "
           "engine/ops/elementwise.cpp.");
    m.def("neg", [](const VarLike& x) { return neg(x.var()); }, arg("x"),
          "-x, any shape.\nBackward: dx = -dy. engine/ops/unary.cpp.");
    m.def("add_scalar", [](const VarLike& x, double s) { return add_scalar(x.var(), s); }, arg("x"), arg("s"),
          "x + s for a number s, any shape.\nBackward: dx = dy. engine/ops/unary.cpp.");
    m.def("mul_scalar", [](const VarLike& x, double s) { return mul_scalar(x.var(), s); }, arg("x"), arg("s"),
          "x * s for a number s, any shape.\nBackward: dx = s * dy. engine/ops/unary.cpp.");

    m.def("exp", [](const VarLike& x) { return exp(x.var()); }, arg("x"),
          "e^x, elementwise, any shape.\nBackward: dx = dy * e^x (the saved output). engine/ops/unary.cpp.");
    m.def("log", [](const VarLike& x) { return log(x.var()); }, arg("x"),
          "Natural log, elementwise, any shape.\nBackward: dx = dy / x. engine/ops/unary.cpp.");
    m.def("sqrt", [](const VarLike& x) { return sqrt(x.var()); }, arg("x"),
          "Square root, elementwise, any shape.\nBackward: dx = dy / (2 sqrt(x)). engine/ops/unary.cpp.");
    m.def("tanh", [](const VarLike& x) { return tanh(x.var()); }, arg("x"),
          "tanh, elementwise, any shape.\nBackward: dx = dy * (1 - tanh(x)^2). engine/ops/unary.cpp.");
    m.def("sigmoid", [](const VarLike& x) { return sigmoid(x.var()); }, arg("x"),
          "1 / (1 + e^-x), elementwise, any shape.\nBackward: dx = dy * s * (1 - s), s the output. "
          "engine/ops/unary.cpp.");
    m.def("relu", [](const VarLike& x) { return relu(x.var()); }, arg("x"),
          "max(x, 0), elementwise, any shape.\nBackward: dx = dy where x > 0, else 0 (0 at x = 0). "
          "engine/ops/unary.cpp.");
    m.def("pow", [](const VarLike& x, const VarLike& exponent) {
        if (py::isinstance<py::float_>(exponent.object) || py::isinstance<py::int_>(exponent.object))
            return pow(x.var(), exponent.object.cast<double>());
        return pow(x.var(), exponent.var());
    }, arg("x"), arg("exponent"),
       "x ** exponent; the exponent is a number, or a Var broadcast against x.\nBackward: dx = dy * p x^(p-1); for a "
       "Var exponent also dp = dy * x^p log x, summed over its broadcast axes. engine/ops/unary.cpp, "
       "engine/ops/elementwise.cpp.");
    m.def("gelu", [](const VarLike& x, const std::string& approximation) {
        return gelu(x.var(), parse_gelu(approximation));
    }, arg("x"), arg("approximation") = "erf",
       "GELU, elementwise, any shape: x Φ(x) (erf, exact) or its tanh approximation (BERT's and GPT-2's).\n"
       "Backward: dx = dy * (Φ(x) + x φ(x)) for erf. Derived in docs/derivations/ops/gelu.md.");

    m.def("sum", [](const VarLike& x, std::optional<int64_t> axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return sum(v); },
                      [](const Var& v, int64_t a, bool k) { return sum(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false,
       "Sum of every element, x [...] -> [] (axis None), or along one axis: that axis removed, or kept as 1 with "
       "keepdim.\n"
       "Backward: dx = dy broadcast back to x's shape. Derived in docs/derivations/ops/reductions.md.");
    m.def("mean", [](const VarLike& x, std::optional<int64_t> axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return mean(v); },
                      [](const Var& v, int64_t a, bool k) { return mean(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false,
       "Mean of every element, x [...] -> [] (axis None), or along one axis (removed, or kept as 1).\n"
       "Backward: dx = dy / n broadcast back, n the "
       "elements averaged. Derived in docs/derivations/ops/reductions.md.");
    m.def("max", [](const VarLike& x, std::optional<int64_t> axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return max(v); },
                      [](const Var& v, int64_t a, bool k) { return max(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false,
       "Max of every element, x [...] -> [] (axis None), or along one axis (removed, or kept as 1).\n"
       "Backward: dy goes to the first maximum, 0 elsewhere. "
       "Derived in docs/derivations/ops/reductions.md.");

    m.def("reshape", [](const VarLike& x, const Shape& shape) { return reshape(x.var(), shape); }, arg("x"),
          arg("shape"), "x [...] -> [shape], as many elements (row-major order kept).\nBackward: dx = dy reshaped "
          "back. engine/ops/shape.cpp.");
    m.def("permute", [](const VarLike& x, const std::vector<int64_t>& axes) { return permute(x.var(), axes); },
          arg("x"), arg("axes"), "x's axes reordered: output axis i is x's axis axes[i].\nBackward: dy permuted by "
          "the inverse order. engine/ops/shape.cpp.");
    m.def("transpose", [](const VarLike& x, int64_t a, int64_t b) { return transpose(x.var(), a, b); },
          arg("x"), arg("axis_a"), arg("axis_b"),
          "x [..., a, ..., b, ...] -> [..., b, ..., a, ...]: two axes swapped.\n"
          "Backward: dy with the same two axes "
          "swapped back. engine/ops/shape.cpp.");
    m.def("slice", [](const VarLike& x, int64_t axis, int64_t start, int64_t end) {
        return slice(x.var(), axis, start, end);
    }, arg("x"), arg("axis"), arg("start"), arg("end"),
       "x[..., start:end, ...] along one axis.\nBackward: dy written into zeros of x's shape at those positions. "
       "engine/ops/shape.cpp.");
    m.def("concat", [](const py::sequence& parts, int64_t axis) { return concat(var_list(parts), axis); },
          arg("parts"), arg("axis"),
          "The parts [..., n_i, ...] joined along an existing axis -> [..., sum n_i, ...] (their other sizes equal).\n"
          "Backward: each part gets its own slice of dy. engine/ops/shape.cpp.");
    m.def("stack", [](const py::sequence& parts, int64_t axis) { return stack(var_list(parts), axis); },
          arg("parts"), arg("axis"), "The parts, each [s...], joined along a new axis -> [..., len(parts), ...].\n"
          "Backward: each part gets its "
          "own index of dy along that axis. engine/ops/shape.cpp.");
    m.def("index_select", [](const VarLike& table, const ArrayLike& indices) {
        return index_select(table.var(), indices.tensor());
    }, arg("table"), arg("indices"),
       "Embedding lookup: table [V, ...], int64 indices [n...] -> [n..., ...] (rows of table).\nBackward: each "
       "row of dy is added into dtable at its index (repeated indices add up). engine/ops/index_select.cpp.");

    m.def("softmax", [](const VarLike& x) { return softmax(x.var()); }, arg("x"),
          "Softmax over the last axis, x [..., C] -> [..., C]: y_j = e^(x_j) / sum_k e^(x_k).\n"
          "Backward: dx = y * (dy - "
          "sum_j dy_j y_j), row by row. Derived in docs/derivations/ops/softmax.md.");
    m.def("log_softmax", [](const VarLike& x) { return log_softmax(x.var()); }, arg("x"),
          "log softmax over the last axis, x [..., C] -> [..., C]: x_j - log sum_k e^(x_k), computed stably.\n"
          "Backward: dx = dy - "
          "softmax(x) * sum_j dy_j. Derived in docs/derivations/ops/softmax.md.");
    m.def("cross_entropy", [](const VarLike& logits, const ArrayLike& targets) {
        return cross_entropy(logits.var(), targets.tensor());
    }, arg("logits"), arg("targets"),
       "Mean over rows of -log softmax(logits)[target]: logits [N, C], int64 targets [N] -> a scalar [].\n"
       "Backward: dlogits = (softmax(logits) - onehot(target)) / N. Derived in "
       "docs/derivations/ops/cross_entropy.md.");
    m.def("layer_norm", [](const VarLike& x, const VarLike& weight, const VarLike& bias, double eps) {
        return layer_norm(x.var(), weight.var(), bias.var(), eps);
    }, arg("x"), arg("weight"), arg("bias"), arg("eps") = 1e-5,
       "Layer norm over the last axis: x [..., D], weight [D], bias [D] -> [..., D]; (x - mean) / sqrt(var + eps) "
       "· weight + bias, the variance biased (PyTorch's).\nBackward: dx = (g - mean(g) - x̂ mean(g x̂)) / sqrt(var + "
       "eps) with g = dy · weight, x̂ the normalised row. Derived in docs/derivations/ops/layer_norm.md.");
    m.def("dropout", [](const VarLike& x, double p, Generator& generator, bool training) {
        return dropout(x.var(), p, generator, training);
    }, arg("x"), arg("p"), arg("generator"), arg("training") = true,
       "Inverted dropout, any shape: each element kept with probability 1 - p and scaled by 1 / (1 - p); the "
       "identity when not training.\nBackward: dx = dy * the same mask / (1 - p). Derived in "
       "docs/derivations/ops/dropout.md.");
    m.def("relu_dropout", [](const VarLike& x, double p, Generator& generator, bool training) {
        return relu_dropout(x.var(), p, generator, training);
    }, arg("x"), arg("p"), arg("generator"), arg("training") = true,
       "dropout(relu(x)) in one pass, any shape, the same numbers as the two ops in turn.\nBackward: dx = dy * "
       "mask / (1 - p) where x > 0. docs/derivations/ops/dropout.md.");
    m.def("masked_mean_pool", [](const VarLike& x, const ArrayLike& mask) {
        return masked_mean_pool(x.var(), mask.tensor());
    }, arg("x"), arg("mask"),
       "Mean over the real tokens: x [B, T, D], mask [B, T] (nonzero = a token) -> [B, D].\nBackward: dx[b, t] = "
       "dy[b] / n_b for each real token t, 0 for padding. Derived in docs/derivations/ops/masked_mean_pool.md.");
    m.def("l2_normalize", [](const VarLike& x, double eps) { return l2_normalize(x.var(), eps); },
          arg("x"), arg("eps") = 1e-12,
          "Each row over the last axis divided by its length, max(||x||, eps): [..., D] -> [..., D].\nBackward: dx = "
          "(dy - y (y · dy)) / ||x||, y the output. Derived in docs/derivations/ops/l2_normalize.md.");
    m.def("scaled_dot_product_attention", [](const VarLike& q, const VarLike& k, const VarLike& v,
                                             const ArrayLike& mask) {
        return scaled_dot_product_attention(q.var(), k.var(), v.var(), optional_tensor(mask));
    }, arg("q"), arg("k"), arg("v"), arg("keep_mask") = py::none(),
       "softmax(q k^T / sqrt(dh)) v for q [B, H, Tq, dh], k and v [B, H, Tk, dh] -> [B, H, Tq, dh]. keep_mask "
       "[B, Tk]: nonzero = a real key, kept (the opposite of PyTorch's key_padding_mask, where True = padding: pass "
       "~mask); None: every key.\nBackward: through v, the softmax's Jacobian, and q, k. Derived in "
       "docs/derivations/ops/attention.md.");
}

}  // namespace nce::python
