#include "engine/tensor_math.h"

#include <cmath>

namespace nce {
namespace {

Backend& backend_of(const Tensor& x) {
    NCE_CHECK(x.defined(), "tensor math on an undefined tensor");
    return backend_for(x.device());
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
    NCE_CHECK(a.device() == b.device(), "{}: operands on different devices ({} and {})", op, device_name(a.device()),
              device_name(b.device()));
}

Shape reduced_shape(const Shape& shape, int64_t axis, bool keepdim) {
    Shape out = shape;
    if (keepdim)
        out[axis] = 1;
    else
        out.erase(out.begin() + axis);
    return out;
}

}  // namespace

void check_floating(const Tensor& x, const char* op, const char* what) {
    NCE_CHECK(x.defined(), "{}: {} is missing", op, what);
    NCE_CHECK(is_floating(x.dtype()), "{}: {} must be float32 or float64, got {}", op, what, dtype_name(x.dtype()));
}

// ---- matmul ----

static Shape matmul_shape(const Tensor& a, const Tensor& b, bool ta, bool tb) {
    NCE_CHECK(a.rank() >= 2 && a.rank() <= 3 && b.rank() >= 2 && b.rank() <= 3,
              "matmul: operands must be 2-D or 3-D, got {} and {}", shape_string(a.shape()), shape_string(b.shape()));
    check_same_dtype(a, b, "matmul");
    check_floating(a, "matmul", "left operand");
    int64_t m = ta ? a.size(-1) : a.size(-2), k = ta ? a.size(-2) : a.size(-1);
    int64_t k2 = tb ? b.size(-1) : b.size(-2), n = tb ? b.size(-2) : b.size(-1);
    NCE_CHECK(k == k2, "matmul: inner sizes differ: {}{} · {}{} ({} vs {})", shape_string(a.shape()), ta ? "^T" : "",
              shape_string(b.shape()), tb ? "^T" : "", k, k2);
    if (a.rank() == 3 && b.rank() == 3)
        NCE_CHECK(a.size(0) == b.size(0), "matmul: batch sizes differ: {} and {}", shape_string(a.shape()),
                  shape_string(b.shape()));
    if (a.rank() == 3) return {a.size(0), m, n};
    if (b.rank() == 3) return {b.size(0), m, n};
    return {m, n};
}

Tensor matmul(const Tensor& a, const Tensor& b, Transpose transpose) {
    bool ta = transpose == Transpose::First || transpose == Transpose::Both;
    bool tb = transpose == Transpose::Second || transpose == Transpose::Both;
    Tensor out = Tensor::empty(matmul_shape(a, b, ta, tb), a.dtype(), a.device());
    check_same_device(a, b, "matmul");
    backend_of(a).gemm(a, ta, b, tb, out, 1.0, 0.0);
    return out;
}

void matmul_into(const Tensor& a, const Tensor& b, Transpose transpose, Tensor& out, double alpha, double beta) {
    bool ta = transpose == Transpose::First || transpose == Transpose::Both;
    bool tb = transpose == Transpose::Second || transpose == Transpose::Both;
    Shape shape = matmul_shape(a, b, ta, tb);
    NCE_CHECK(out.shape() == shape && out.dtype() == a.dtype(), "matmul_into: output has shape {}, expected {}",
              shape_string(out.shape()), shape_string(shape));
    backend_of(a).gemm(a, ta, b, tb, out, alpha, beta);
}

// ---- elementwise ----

Tensor unary(UnaryOp op, const Tensor& x) {
    check_floating(x, "unary op", "input");
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend_of(x).unary(op, x, out);
    return out;
}
Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::Square, x); }
Tensor step(const Tensor& x) { return unary(UnaryOp::Step, x); }

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
    check_floating(a, "binary op", "left operand");
    check_same_dtype(a, b, "binary op");
    check_same_device(a, b, "binary op");
    Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), "binary op"), a.dtype(), a.device());
    backend_of(a).binary(op, a, b, out);
    return out;
}
Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Greater, a, b); }

Tensor binary_scalar(BinaryOp op, const Tensor& x, double s) {
    check_floating(x, "scalar op", "input");
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend_of(x).binary_scalar(op, x, s, out);
    return out;
}
Tensor add(const Tensor& x, double s) { return binary_scalar(BinaryOp::Add, x, s); }
Tensor mul(const Tensor& x, double s) { return binary_scalar(BinaryOp::Mul, x, s); }
Tensor pow(const Tensor& x, double exponent) { return binary_scalar(BinaryOp::Pow, x, exponent); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& x, double s) { return binary_scalar(BinaryOp::Add, x, s); }
Tensor operator-(const Tensor& x, double s) { return binary_scalar(BinaryOp::Sub, x, s); }
Tensor operator*(const Tensor& x, double s) { return binary_scalar(BinaryOp::Mul, x, s); }
Tensor operator/(const Tensor& x, double s) { return binary_scalar(BinaryOp::Div, x, s); }
Tensor operator+(double s, const Tensor& x) { return binary_scalar(BinaryOp::Add, x, s); }
Tensor operator-(double s, const Tensor& x) { return binary_scalar(BinaryOp::Add, neg(x), s); }
Tensor operator*(double s, const Tensor& x) { return binary_scalar(BinaryOp::Mul, x, s); }

void add_inplace(Tensor& a, const Tensor& b) {
    NCE_CHECK(a.shape() == b.shape(), "add_inplace: shapes differ: {} and {}", shape_string(a.shape()),
              shape_string(b.shape()));
    check_same_dtype(a, b, "add_inplace");
    backend_of(a).binary(BinaryOp::Add, a, b, a);
}

// ---- reductions ----

Tensor sum(const Tensor& x, int64_t axis, bool keepdim) {
    check_floating(x, "sum", "input");
    axis = normalize_axis(axis, x.rank(), "sum");
    Tensor out = Tensor::empty(reduced_shape(x.shape(), axis, keepdim), x.dtype(), x.device());
    backend_of(x).reduce(ReduceOp::Sum, x, axis, out, nullptr);
    return out;
}

Tensor sum(const Tensor& x) {
    check_floating(x, "sum", "input");
    Tensor flat = x.reshape({x.numel()});
    Tensor out = Tensor::empty({}, x.dtype(), x.device());
    backend_of(x).reduce(ReduceOp::Sum, flat, 0, out, nullptr);
    return out;
}

Tensor mean(const Tensor& x, int64_t axis, bool keepdim) {
    check_floating(x, "mean", "input");
    int64_t n = x.shape()[normalize_axis(axis, x.rank(), "mean")];
    NCE_CHECK(n > 0, "mean: axis {} of {} is empty", axis, shape_string(x.shape()));
    return sum(x, axis, keepdim) * (1.0 / static_cast<double>(n));
}

Tensor mean(const Tensor& x) {
    NCE_CHECK(x.numel() > 0, "mean: the tensor is empty");
    return sum(x) * (1.0 / static_cast<double>(x.numel()));
}

MaxResult max(const Tensor& x, int64_t axis, bool keepdim) {
    check_floating(x, "max", "input");
    axis = normalize_axis(axis, x.rank(), "max");
    NCE_CHECK(x.size(axis) > 0, "max: axis {} of {} is empty", axis, shape_string(x.shape()));
    Shape shape = reduced_shape(x.shape(), axis, keepdim);
    MaxResult result{Tensor::empty(shape, x.dtype(), x.device()), Tensor::empty(shape, Dtype::Int64, x.device())};
    backend_of(x).reduce(ReduceOp::Max, x, axis, result.values, &result.indices);
    return result;
}

Tensor max(const Tensor& x) {
    NCE_CHECK(x.numel() > 0, "max: the tensor is empty");
    return max(x.reshape({x.numel()}), 0, false).values;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
    if (x.shape() == shape) return x;
    NCE_CHECK(shape.size() <= x.shape().size(), "sum_to: cannot sum {} down to {}", shape_string(x.shape()),
              shape_string(shape));
    Tensor out = Tensor::empty(shape, x.dtype(), x.device());
    backend_of(x).sum_to(x, out);
    return out;
}

// ---- layout ----

Tensor permute(const Tensor& x, const std::vector<int64_t>& axes) {
    NCE_CHECK(static_cast<int64_t>(axes.size()) == x.rank(), "permute: {} axes given for a tensor of rank {}",
              axes.size(), x.rank());
    std::vector<bool> seen(axes.size(), false);
    Shape shape(axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
        int64_t axis = normalize_axis(axes[i], x.rank(), "permute");
        NCE_CHECK(!seen[axis], "permute: axis {} appears twice in ({})", axis, fmt::join(axes, ", "));
        seen[axis] = true;
        shape[i] = x.shape()[axis];
    }
    Tensor out = Tensor::empty(shape, x.dtype(), x.device());
    std::vector<int64_t> normalized(axes.size());
    for (size_t i = 0; i < axes.size(); ++i) normalized[i] = normalize_axis(axes[i], x.rank(), "permute");
    backend_of(x).permute(x, normalized, out);
    return out;
}

Tensor transpose(const Tensor& x, int64_t axis_a, int64_t axis_b) {
    std::vector<int64_t> axes(static_cast<size_t>(x.rank()));
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    std::swap(axes[normalize_axis(axis_a, x.rank(), "transpose")], axes[normalize_axis(axis_b, x.rank(), "transpose")]);
    return permute(x, axes);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
    axis = normalize_axis(axis, x.rank(), "slice");
    int64_t size = x.shape()[axis];
    NCE_CHECK(0 <= start && start <= end && end <= size, "slice: range [{}, {}) is outside axis {} of {}", start, end,
              axis, shape_string(x.shape()));
    Shape shape = x.shape();
    shape[axis] = end - start;
    Tensor out = Tensor::empty(shape, x.dtype(), x.device());
    backend_of(x).copy_along_axis(x, start, out, 0, axis, end - start, false);
    return out;
}

Tensor concat(const std::vector<Tensor>& parts, int64_t axis) {
    NCE_CHECK(!parts.empty(), "concat: no tensors given");
    const Tensor& first = parts.front();
    axis = normalize_axis(axis, first.rank(), "concat");
    Shape shape = first.shape();
    int64_t total = 0;
    for (const Tensor& part : parts) {
        NCE_CHECK(part.rank() == first.rank() && part.dtype() == first.dtype(),
                  "concat: parts differ in rank or dtype ({} {} vs {} {})", shape_string(first.shape()),
                  dtype_name(first.dtype()), shape_string(part.shape()), dtype_name(part.dtype()));
        for (int64_t i = 0; i < first.rank(); ++i)
            NCE_CHECK(i == axis || part.shape()[i] == shape[i], "concat: shapes {} and {} differ off axis {}",
                      shape_string(first.shape()), shape_string(part.shape()), axis);
        total += part.shape()[axis];
    }
    shape[axis] = total;
    Tensor out = Tensor::empty(shape, first.dtype(), first.device());
    int64_t offset = 0;
    for (const Tensor& part : parts) {
        backend_of(part).copy_along_axis(part, 0, out, offset, axis, part.shape()[axis], false);
        offset += part.shape()[axis];
    }
    return out;
}

Tensor repeat_rows(const Tensor& row, int64_t count) {
    NCE_CHECK(row.rank() == 1, "repeat_rows: the row must be 1-D, got {}", shape_string(row.shape()));
    NCE_CHECK(count >= 0, "repeat_rows: count must be >= 0, got {}", count);
    Tensor out = Tensor::empty({count, row.size(0)}, row.dtype(), row.device());
    // Row 0 of a one-row table, `count` times (the rows are copied in parallel).
    Tensor all_first = Tensor::zeros({count}, Dtype::Int64, row.device());
    backend_of(row).index_select_rows(row.reshape({1, row.size(0)}), all_first, out);
    return out;
}

Tensor stack(const std::vector<Tensor>& parts, int64_t axis) {
    NCE_CHECK(!parts.empty(), "stack: no tensors given");
    axis = normalize_axis(axis, parts.front().rank() + 1, "stack");
    std::vector<Tensor> expanded;
    for (const Tensor& part : parts) {
        NCE_CHECK(part.shape() == parts.front().shape(), "stack: shapes differ: {} and {}",
                  shape_string(parts.front().shape()), shape_string(part.shape()));
        Shape shape = part.shape();
        shape.insert(shape.begin() + axis, 1);
        expanded.push_back(part.reshape(shape));
    }
    return concat(expanded, axis);
}

Tensor index_select(const Tensor& table, const Tensor& indices) {
    NCE_CHECK(table.rank() >= 1, "index_select: the table must have rank >= 1, got {}", shape_string(table.shape()));
    NCE_CHECK(indices.dtype() == Dtype::Int64, "index_select: indices must be int64, got {}", dtype_name(indices.dtype()));
    Shape shape = indices.shape();
    shape.insert(shape.end(), table.shape().begin() + 1, table.shape().end());
    Tensor out = Tensor::empty(shape, table.dtype(), table.device());
    backend_of(table).index_select_rows(table, indices, out);
    return out;
}

// ---- softmax, masking ----

Tensor softmax(const Tensor& x) {
    check_floating(x, "softmax", "input");
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend_of(x).softmax_last_axis(x, out, false);
    return out;
}

std::pair<Tensor, Tensor> packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention) {
    const int64_t batch = qkv.size(0), tokens = qkv.size(1), model_dim = qkv.size(2) / 3;
    Tensor out = Tensor::empty({batch, tokens, model_dim}, qkv.dtype(), qkv.device());
    Tensor probabilities = Tensor::empty({batch, attention.heads, tokens, tokens}, qkv.dtype(), qkv.device());
    backend_of(qkv).packed_attention(qkv, key_mask, attention, probabilities, out);
    return {out, probabilities};
}

Tensor packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                 const PackedAttention& attention) {
    Tensor dqkv = Tensor::empty(qkv.shape(), qkv.dtype(), qkv.device());
    backend_of(qkv).packed_attention_backward(qkv, probabilities, dout, attention, dqkv);
    return dqkv;
}

Tensor log_softmax(const Tensor& x) {
    check_floating(x, "log_softmax", "input");
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend_of(x).softmax_last_axis(x, out, true);
    return out;
}

static Tensor softmax_last_axis_backward(const Tensor& y, const Tensor& dy, bool log, const char* op) {
    check_floating(y, op, "forward output");
    check_same_dtype(y, dy, op);
    check_same_device(y, dy, op);
    NCE_CHECK(y.shape() == dy.shape(), "{}: gradient {} does not match the output {}", op, shape_string(dy.shape()),
              shape_string(y.shape()));
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    backend_of(y).softmax_last_axis_backward(y, dy, dx, log);
    return dx;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
    return softmax_last_axis_backward(y, dy, false, "softmax backward");
}

Tensor log_softmax_backward(const Tensor& y, const Tensor& dy) {
    return softmax_last_axis_backward(y, dy, true, "log_softmax backward");
}

Tensor cross_entropy_rows_inplace(Tensor& logits, int64_t target_start, double scale) {
    check_floating(logits, "cross_entropy_rows", "logits");
    check_rank(logits, 2, "cross_entropy_rows", "logits");
    NCE_CHECK(logits.size(1) > 0 && target_start >= 0 && target_start + logits.size(0) <= logits.size(1),
              "cross_entropy_rows: target columns [{}, {}) are outside the {} columns of the logits", target_start,
              target_start + logits.size(0), logits.size(1));
    Tensor row_loss = Tensor::empty({logits.size(0)}, logits.dtype(), logits.device());
    backend_of(logits).cross_entropy_rows(logits, target_start, scale, row_loss);
    return row_loss;
}

Tensor keep_where(const Tensor& x, const Tensor& keep, double fill) {
    check_floating(x, "keep_where", "input");
    check_same_dtype(x, keep, "keep_where");
    NCE_CHECK(broadcast_shapes(x.shape(), keep.shape(), "keep_where") == x.shape(),
              "keep_where: mask {} does not broadcast to {}", shape_string(keep.shape()), shape_string(x.shape()));
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend_of(x).keep_where(x, keep, fill, out);
    return out;
}

Tensor zeros_like(const Tensor& x) { return Tensor::zeros(x.shape(), x.dtype(), x.device()); }
Tensor full_like(const Tensor& x, double value) { return Tensor::full(x.shape(), value, x.dtype(), x.device()); }

// ---- checks ----

bool all_finite(const Tensor& x) {
    if (!is_floating(x.dtype()) || x.numel() == 0) return true;
    if (x.device() != Device::CPU) {
        // On the device, and one number back: x · 0 is 0 where x is finite and NaN where it is
        // NaN or ±inf, and a NaN carries through a sum. Each row of [numel / last, last] is
        // summed first (a row to a thread on a GPU), then the row sums.
        const int64_t last = x.rank() == 0 ? 1 : x.size(x.rank() - 1);
        Tensor zeros_or_nans = (x * 0.0).reshape({x.numel() / last, last});
        return std::isfinite(sum(sum(zeros_or_nans, 1)).item());
    }
    Tensor host = x;
    // A typed loop: every loss checks its inputs with this, so it reads N x d values per call.
    auto finite = [n = host.numel()](const auto* values) {
        bool every = true;
        for (int64_t i = 0; i < n; ++i) every &= std::isfinite(values[i]);
        return every;
    };
    return host.dtype() == Dtype::Float32 ? finite(host.data<float>()) : finite(host.data<double>());
}

double max_abs(const Tensor& x) {
    Tensor host = x.to(Device::CPU);
    double m = 0;
    for (int64_t i = 0; i < host.numel(); ++i) m = std::max(m, std::abs(host.at(i)));
    return m;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
    NCE_CHECK(a.shape() == b.shape(), "max_abs_difference: shapes differ: {} and {}", shape_string(a.shape()),
              shape_string(b.shape()));
    Tensor ha = a.to(Device::CPU), hb = b.to(Device::CPU);
    double m = 0;
    for (int64_t i = 0; i < ha.numel(); ++i) {
        double d = std::abs(ha.at(i) - hb.at(i));
        if (std::isnan(d)) return d;
        m = std::max(m, d);
    }
    return m;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    if (a.shape() != b.shape()) return false;
    Tensor ha = a.to(Device::CPU), hb = b.to(Device::CPU);
    for (int64_t i = 0; i < ha.numel(); ++i) {
        double x = ha.at(i), y = hb.at(i);
        if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
    }
    return true;
}

}  // namespace nce
