// Every op of engine/ops.h under its own name and with its own parameters. Inputs may be
// Vars (gradients flow through them) or anything array-like (constants); masks, indices and
// targets are tensors. Shape and parameter errors are the engine's one-line ValueErrors.
//
//   y = nce.matmul(a, b, transpose="second")     # a · b^T
//   s = nce.sum(x, axis=1, keepdim=True)
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

Var as_var(py::handle object) { return var_from_python(object); }

// An optional tensor argument: None gives an undefined tensor (no mask).
Tensor optional_tensor(py::handle object) { return object.is_none() ? Tensor() : tensor_from_python(object); }

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
    for (py::handle part : parts) vars.push_back(as_var(part));
    return vars;
}

// Reductions: axis None reduces every element to a scalar.
template <typename Whole, typename Along>
Var reduce(py::handle x, py::object axis, bool keepdim, Whole whole, Along along) {
    if (axis.is_none()) return whole(as_var(x));
    return along(as_var(x), axis.cast<int64_t>(), keepdim);
}

}  // namespace

void bind_ops(py::module_& m) {
    using py::arg;
    m.def("matmul", [](py::handle a, py::handle b, const std::string& transpose) {
        return matmul(as_var(a), as_var(b), parse_transpose(transpose));
    }, arg("a"), arg("b"), arg("transpose") = "none", "a [m,k] · b [k,n] (or batched); transpose: none|first|second|both");
    m.def("affine", [](py::handle x, py::handle weight, py::handle bias) {
        return affine(as_var(x), as_var(weight), as_var(bias));
    }, arg("x"), arg("weight"), arg("bias"), "x [N,in] · weight [out,in]^T + bias [out]");
    m.def("packed_attention", [](py::handle qkv, py::handle mask, int64_t heads, double dropout, Generator* generator) {
        return packed_attention(as_var(qkv), tensor_from_python(mask), heads, dropout, generator);
    }, arg("qkv"), arg("keep_mask"), arg("heads"), arg("dropout") = 0.0, arg("generator") = nullptr,
       "Multi-head self-attention on packed projections qkv [B,T,3D] -> [B,T,D]. keep_mask [B,T]: nonzero = a "
       "real token, kept (the opposite of PyTorch's key_padding_mask, where True = padding: pass ~mask).");

    m.def("add", [](py::handle a, py::handle b) { return add(as_var(a), as_var(b)); }, arg("a"), arg("b"));
    m.def("sub", [](py::handle a, py::handle b) { return sub(as_var(a), as_var(b)); }, arg("a"), arg("b"));
    m.def("mul", [](py::handle a, py::handle b) { return mul(as_var(a), as_var(b)); }, arg("a"), arg("b"));
    m.def("div", [](py::handle a, py::handle b) { return div(as_var(a), as_var(b)); }, arg("a"), arg("b"));
    m.def("neg", [](py::handle x) { return neg(as_var(x)); }, arg("x"));
    m.def("add_scalar", [](py::handle x, double s) { return add_scalar(as_var(x), s); }, arg("x"), arg("s"));
    m.def("mul_scalar", [](py::handle x, double s) { return mul_scalar(as_var(x), s); }, arg("x"), arg("s"));

    m.def("exp", [](py::handle x) { return exp(as_var(x)); }, arg("x"));
    m.def("log", [](py::handle x) { return log(as_var(x)); }, arg("x"));
    m.def("sqrt", [](py::handle x) { return sqrt(as_var(x)); }, arg("x"));
    m.def("tanh", [](py::handle x) { return tanh(as_var(x)); }, arg("x"));
    m.def("sigmoid", [](py::handle x) { return sigmoid(as_var(x)); }, arg("x"));
    m.def("relu", [](py::handle x) { return relu(as_var(x)); }, arg("x"));
    m.def("pow", [](py::handle x, py::handle exponent) {
        if (py::isinstance<py::float_>(exponent) || py::isinstance<py::int_>(exponent))
            return pow(as_var(x), exponent.cast<double>());
        return pow(as_var(x), as_var(exponent));
    }, arg("x"), arg("exponent"), "x ** exponent; the exponent is a number or (broadcast) a Var");
    m.def("gelu", [](py::handle x, const std::string& approximation) {
        return gelu(as_var(x), parse_gelu(approximation));
    }, arg("x"), arg("approximation") = "erf");

    m.def("sum", [](py::handle x, py::object axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return sum(v); },
                      [](const Var& v, int64_t a, bool k) { return sum(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false);
    m.def("mean", [](py::handle x, py::object axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return mean(v); },
                      [](const Var& v, int64_t a, bool k) { return mean(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false);
    m.def("max", [](py::handle x, py::object axis, bool keepdim) {
        return reduce(x, axis, keepdim, [](const Var& v) { return max(v); },
                      [](const Var& v, int64_t a, bool k) { return max(v, a, k); });
    }, arg("x"), arg("axis") = py::none(), arg("keepdim") = false, "Max; the gradient goes to the first maximum");

    m.def("reshape", [](py::handle x, const Shape& shape) { return reshape(as_var(x), shape); }, arg("x"), arg("shape"));
    m.def("permute", [](py::handle x, const std::vector<int64_t>& axes) { return permute(as_var(x), axes); },
          arg("x"), arg("axes"));
    m.def("transpose", [](py::handle x, int64_t a, int64_t b) { return transpose(as_var(x), a, b); },
          arg("x"), arg("axis_a"), arg("axis_b"));
    m.def("slice", [](py::handle x, int64_t axis, int64_t start, int64_t end) {
        return slice(as_var(x), axis, start, end);
    }, arg("x"), arg("axis"), arg("start"), arg("end"));
    m.def("concat", [](const py::sequence& parts, int64_t axis) { return concat(var_list(parts), axis); },
          arg("parts"), arg("axis"));
    m.def("stack", [](const py::sequence& parts, int64_t axis) { return stack(var_list(parts), axis); },
          arg("parts"), arg("axis"));
    m.def("index_select", [](py::handle table, py::handle indices) {
        return index_select(as_var(table), tensor_from_python(indices));
    }, arg("table"), arg("indices"), "Embedding lookup: table [V,...], int64 indices [n...] -> [n...,...]");

    m.def("softmax", [](py::handle x) { return softmax(as_var(x)); }, arg("x"), "Over the last axis");
    m.def("log_softmax", [](py::handle x) { return log_softmax(as_var(x)); }, arg("x"), "Over the last axis");
    m.def("cross_entropy", [](py::handle logits, py::handle targets) {
        return cross_entropy(as_var(logits), tensor_from_python(targets));
    }, arg("logits"), arg("targets"), "Mean over rows of -log softmax(logits)[target]; targets int64 [N]");
    m.def("layer_norm", [](py::handle x, py::handle weight, py::handle bias, double eps) {
        return layer_norm(as_var(x), as_var(weight), as_var(bias), eps);
    }, arg("x"), arg("weight"), arg("bias"), arg("eps") = 1e-5);
    m.def("dropout", [](py::handle x, double p, Generator& generator, bool training) {
        return dropout(as_var(x), p, generator, training);
    }, arg("x"), arg("p"), arg("generator"), arg("training") = true);
    m.def("relu_dropout", [](py::handle x, double p, Generator& generator, bool training) {
        return relu_dropout(as_var(x), p, generator, training);
    }, arg("x"), arg("p"), arg("generator"), arg("training") = true);
    m.def("masked_mean_pool", [](py::handle x, py::handle mask) {
        return masked_mean_pool(as_var(x), tensor_from_python(mask));
    }, arg("x"), arg("mask"), "x [B,T,D], mask [B,T] (nonzero = token) -> [B,D]");
    m.def("l2_normalize", [](py::handle x, double eps) { return l2_normalize(as_var(x), eps); },
          arg("x"), arg("eps") = 1e-12);
    m.def("scaled_dot_product_attention", [](py::handle q, py::handle k, py::handle v, py::handle mask) {
        return scaled_dot_product_attention(as_var(q), as_var(k), as_var(v), optional_tensor(mask));
    }, arg("q"), arg("k"), arg("v"), arg("keep_mask") = py::none(),
       "softmax(q k^T / sqrt(dh)) v for q [B,H,Tq,dh], k and v [B,H,Tk,dh]. keep_mask [B,Tk]: nonzero = a real key, "
       "kept (the opposite of PyTorch's key_padding_mask, where True = padding: pass ~mask); None: every key.");
}

}  // namespace nce::python
