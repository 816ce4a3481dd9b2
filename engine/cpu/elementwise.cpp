// Elementwise kernels: unary maps, broadcasting binary ops, scalar ops, masked fill.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <cmath>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/exact_exp.h"

namespace nce::cpu {
namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.7071067811865476;     // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1/sqrt(2 pi)

template <typename T>
void unary_block(UnaryOp op, const T* x_data, T* y_data, int64_t n) {
    ConstArrayMap<T> x(x_data, n);
    ArrayMap<T> y(y_data, n);
    switch (op) {
        case UnaryOp::Neg: y = -x; break;
        case UnaryOp::Exp: y = exact_exp(x); break;  // exp(-inf) = 0 exactly
        case UnaryOp::Log: y = x.log(); break;
        case UnaryOp::Sqrt: y = x.sqrt(); break;
        case UnaryOp::Tanh: y = x.tanh(); break;
        // Written so that neither branch overflows: exp of a non-positive number only.
        case UnaryOp::Sigmoid:
            for (int64_t i = 0; i < n; ++i) {
                T v = x_data[i];
                T e = std::exp(-std::abs(v));
                y_data[i] = v >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
            }
            break;
        case UnaryOp::Relu: y = x.max(T(0)); break;
        case UnaryOp::Abs: y = x.abs(); break;
        case UnaryOp::Square: y = x.square(); break;
        case UnaryOp::Reciprocal: y = x.inverse(); break;
        case UnaryOp::Step: y = (x > T(0)).template cast<T>(); break;
        // Eigen's erf: vectorised for float32 (a rational approximation within a couple of ulp,
        // unsupported/Eigen/SpecialFunctions), the C library's erf for float64.
        case UnaryOp::GeluErf: y = T(0.5) * x * (T(1) + (x * T(kInvSqrt2)).erf()); break;
        case UnaryOp::GeluTanh:
            for (int64_t i = 0; i < n; ++i) {
                T v = x_data[i];
                y_data[i] = T(0.5) * v * (T(1) + std::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v)));
            }
            break;
        // d/dx [x Phi(x)] = Phi(x) + x phi(x)
        // (exact_exp: far out, phi(x) is 0, not a denormal that x·phi(x) would carry on.)
        case UnaryOp::GeluErfDerivative:
            y = T(0.5) * (T(1) + (x * T(kInvSqrt2)).erf()) + x * (T(kInvSqrt2Pi) * exact_exp(T(-0.5) * x.square()));
            break;
        // u = sqrt(2/pi)(x + 0.044715 x^3), g = 0.5 x (1 + tanh u)
        // dg/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3·0.044715 x^2)
        case UnaryOp::GeluTanhDerivative:
            for (int64_t i = 0; i < n; ++i) {
                T v = x_data[i];
                T t = std::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v));
                y_data[i] = T(0.5) * (T(1) + t) +
                            T(0.5) * v * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
            }
            break;
    }
}

template <typename T>
inline T apply_binary(BinaryOp op, T a, T b) {
    switch (op) {
        case BinaryOp::Add: return a + b;
        case BinaryOp::Sub: return a - b;
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
        case BinaryOp::Pow: return std::pow(a, b);
        case BinaryOp::Maximum: return a > b ? a : b;
        case BinaryOp::Minimum: return a < b ? a : b;
        case BinaryOp::Greater: return a > b ? T(1) : T(0);
    }
    return T(0);
}

template <typename T>
void binary_same_shape(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
    ConstArrayMap<T> x(a, n), y(b, n);
    ArrayMap<T> z(out, n);
    switch (op) {
        case BinaryOp::Add: z = x + y; break;
        case BinaryOp::Sub: z = x - y; break;
        case BinaryOp::Mul: z = x * y; break;
        case BinaryOp::Div: z = x / y; break;
        default:
            for (int64_t i = 0; i < n; ++i) out[i] = apply_binary(op, a[i], b[i]);
    }
}

template <typename T>
void binary_with_scalar(BinaryOp op, const T* a, T s, T* out, int64_t n) {
    ConstArrayMap<T> x(a, n);
    ArrayMap<T> z(out, n);
    switch (op) {
        case BinaryOp::Add: z = x + s; break;
        case BinaryOp::Sub: z = x - s; break;
        case BinaryOp::Mul: z = x * s; break;
        case BinaryOp::Div: z = x / s; break;
        default:
            for (int64_t i = 0; i < n; ++i) out[i] = apply_binary(op, a[i], s);
    }
}

// Strides of `shape` right-aligned into a rank-`rank` broadcast; 0 along broadcast axes.
std::vector<int64_t> broadcast_strides(const Shape& shape, size_t rank) {
    std::vector<int64_t> own = contiguous_strides(shape);
    std::vector<int64_t> strides(rank, 0);
    size_t lead = rank - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) strides[lead + i] = shape[i] == 1 ? 0 : own[i];
    return strides;
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const Tensor& x, Tensor& out) {
    dispatch_floating(x.dtype(), "unary op", [&](auto zero) {
        using T = decltype(zero);
        const T* x_data = x.data<T>();
        T* y_data = out.data<T>();
        parallel_for(x.numel(), kGrainElements,
                     [&](int64_t begin, int64_t end) { unary_block(op, x_data + begin, y_data + begin, end - begin); });
    });
}

void CpuBackend::binary_scalar(BinaryOp op, const Tensor& x, double s, Tensor& out) {
    dispatch_floating(x.dtype(), "scalar op", [&](auto zero) {
        using T = decltype(zero);
        const T* x_data = x.data<T>();
        T* y_data = out.data<T>();
        parallel_for(x.numel(), kGrainElements, [&](int64_t begin, int64_t end) {
            binary_with_scalar(op, x_data + begin, static_cast<T>(s), y_data + begin, end - begin);
        });
    });
}

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
    dispatch_floating(a.dtype(), "binary op", [&](auto zero) {
        using T = decltype(zero);
        const T* a_data = a.data<T>();
        const T* b_data = b.data<T>();
        T* out_data = out.data<T>();
        if (a.shape() == b.shape()) {
            parallel_for(a.numel(), kGrainElements, [&](int64_t begin, int64_t end) {
                binary_same_shape(op, a_data + begin, b_data + begin, out_data + begin, end - begin);
            });
            return;
        }
        if (b.numel() == 1) {
            binary_scalar(op, a, static_cast<double>(b_data[0]), out);
            return;
        }
        // General broadcast: walk the rows of out (all axes but the last); per row, the
        // offsets into a and b follow from their broadcast strides.
        const Shape& shape = out.shape();
        size_t rank = shape.size();
        std::vector<int64_t> a_strides = broadcast_strides(a.shape(), rank);
        std::vector<int64_t> b_strides = broadcast_strides(b.shape(), rank);
        int64_t row_length = rank == 0 ? 1 : shape.back();
        int64_t rows = row_length == 0 ? 0 : out.numel() / row_length;
        int64_t a_step = rank == 0 ? 0 : a_strides.back();
        int64_t b_step = rank == 0 ? 0 : b_strides.back();
        parallel_for(rows, row_grain(row_length), [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
                int64_t a_offset = 0, b_offset = 0, rest = row;
                for (size_t axis = rank - 1; axis-- > 0;) {
                    int64_t index = rest % shape[axis];
                    rest /= shape[axis];
                    a_offset += index * a_strides[axis];
                    b_offset += index * b_strides[axis];
                }
                T* z = out_data + row * row_length;
                const T* x = a_data + a_offset;
                const T* y = b_data + b_offset;
                if (a_step == 1 && b_step == 1) {
                    binary_same_shape(op, x, y, z, row_length);
                } else if (a_step == 1 && b_step == 0) {
                    binary_with_scalar(op, x, y[0], z, row_length);
                } else {
                    for (int64_t k = 0; k < row_length; ++k) z[k] = apply_binary(op, x[k * a_step], y[k * b_step]);
                }
            }
        });
    });
}

void CpuBackend::keep_where(const Tensor& x, const Tensor& keep, double fill, Tensor& out) {
    // A select, not x·mask: x may hold ±inf where keep is 0, and inf·0 is NaN.
    dispatch_floating(x.dtype(), "keep_where", [&](auto zero) {
        using T = decltype(zero);
        const T* x_data = x.data<T>();
        const T* keep_data = keep.data<T>();
        T* out_data = out.data<T>();
        T fill_value = static_cast<T>(fill);
        if (keep.shape() == out.shape()) {
            parallel_for(out.numel(), kGrainElements, [&](int64_t begin, int64_t end) {
                ConstArrayMap<T> x_part(x_data + begin, end - begin), keep_part(keep_data + begin, end - begin);
                ArrayMap<T>(out_data + begin, end - begin) = (keep_part != T(0)).select(x_part, fill_value);
            });
            return;
        }
        // Row by row along the last axis: keep's offset is found once per row, then
        // steps by its last stride (0 where keep is broadcast along that axis).
        size_t rank = out.shape().size();
        std::vector<int64_t> keep_strides = broadcast_strides(keep.shape(), rank);
        std::vector<int64_t> out_strides = contiguous_strides(out.shape());
        const int64_t row_length = rank == 0 ? 1 : out.shape().back();
        const int64_t keep_step = rank == 0 ? 0 : keep_strides.back();
        const int64_t rows = row_length == 0 ? 0 : out.numel() / row_length;
        parallel_for(rows, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_length)),
                     [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
                int64_t first = row * row_length, keep_offset = 0, rest = first;
                for (size_t axis = 0; axis < rank; ++axis) {
                    keep_offset += rest / out_strides[axis] * keep_strides[axis];
                    rest %= out_strides[axis];
                }
                for (int64_t k = 0; k < row_length; ++k)
                    out_data[first + k] = keep_data[keep_offset + k * keep_step] != T(0) ? x_data[first + k] : fill_value;
            }
        });
    });
}

namespace {

// The first row of x [rows, columns] with no nonzero entry, or -1.
template <typename T>
int64_t first_empty_row(const T* x, int64_t rows, int64_t columns) {
    for (int64_t r = 0; r < rows; ++r) {
        bool any = false;
        for (int64_t c = 0; c < columns && !any; ++c) any = x[r * columns + c] != T(0);
        if (!any) return r;
    }
    return -1;
}

}  // namespace

void CpuBackend::check_rows_nonzero(const Tensor& x, const std::string& message) {
    const int64_t columns = x.rank() == 0 ? 1 : x.size(-1), rows = columns == 0 ? 0 : x.numel() / columns;
    const int64_t empty = x.dtype() == Dtype::Int64     ? first_empty_row(x.data<int64_t>(), rows, columns)
                          : x.dtype() == Dtype::Float32 ? first_empty_row(x.data<float>(), rows, columns)
                                                        : first_empty_row(x.data<double>(), rows, columns);
    NCE_CHECK(empty < 0, "{}", fmt::format(fmt::runtime(message), empty));
}

}  // namespace nce::cpu
