// Per-element bodies of the elementwise kernels (unary, binary, scalar), on host and device.
// The formulas are the CPU backend's (engine/cpu/elementwise.cpp), one element at a time.
#pragma once
#include <cstdint>

#include "engine/backend.h"
#include "engine/cuda/device_math.h"
#include "engine/cuda/device_errors.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.7071067811865476;     // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1/sqrt(2 pi)

// f(v) for a unary op. lowest_normal_log = log(smallest normal T): exp below it is exactly 0
// (as the CPU's exact_exp.h, so a masked -inf logit gives probability 0).
template <typename T>
NCE_HOST_DEVICE inline T unary_value(UnaryOp op, T v, T lowest_normal_log) {
    switch (op) {
        case UnaryOp::Neg: return -v;
        case UnaryOp::Exp: return v < lowest_normal_log ? T(0) : math::exp(v);
        case UnaryOp::Log: return math::log(v);
        case UnaryOp::Sqrt: return math::sqrt(v);
        case UnaryOp::Tanh: return math::tanh(v);
        case UnaryOp::Sigmoid: {  // exp of a non-positive number only: neither branch overflows
            T e = math::exp(-math::abs(v));
            return v >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
        }
        case UnaryOp::Relu: return v > T(0) ? v : T(0);
        case UnaryOp::Abs: return math::abs(v);
        case UnaryOp::Square: return v * v;
        case UnaryOp::Reciprocal: return T(1) / v;
        case UnaryOp::Step: return v > T(0) ? T(1) : T(0);
        case UnaryOp::GeluErf: return T(0.5) * v * (T(1) + math::erf(v * T(kInvSqrt2)));
        case UnaryOp::GeluTanh:
            return T(0.5) * v * (T(1) + math::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v)));
        case UnaryOp::GeluErfDerivative: {  // Phi(x) + x phi(x)
            T cdf = T(0.5) * (T(1) + math::erf(v * T(kInvSqrt2)));
            T pdf = T(kInvSqrt2Pi) * math::exp(T(-0.5) * v * v);
            return cdf + v * pdf;
        }
        case UnaryOp::GeluTanhDerivative: {  // 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'
            T t = math::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v));
            return T(0.5) * (T(1) + t) +
                   T(0.5) * v * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
        }
    }
    return v;
}

template <typename T>
NCE_HOST_DEVICE inline T binary_value(BinaryOp op, T a, T b) {
    switch (op) {
        case BinaryOp::Add: return a + b;
        case BinaryOp::Sub: return a - b;
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
        case BinaryOp::Pow: return math::pow(a, b);
        case BinaryOp::Maximum: return a > b ? a : b;
        case BinaryOp::Minimum: return a < b ? a : b;
        case BinaryOp::Greater: return a > b ? T(1) : T(0);
    }
    return a;
}

// out[i] = f(x[i]).
template <typename T>
struct UnaryBody {
    UnaryOp op;
    const T* x;
    T* out;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = unary_value(op, x[i], lowest_normal_log); }
};

// out[i] = x[i] op s.
template <typename T>
struct ScalarBody {
    BinaryOp op;
    const T* x;
    T s;
    T* out;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = binary_value(op, x[i], s); }
};

// The broadcast of out's shape onto a and b: out's sizes, and a's and b's strides per out
// axis (0 along an axis where the operand has size 1 or is missing).
struct BroadcastLayout {
    int rank = 0;
    int64_t sizes[kMaxRank] = {};
    int64_t a_strides[kMaxRank] = {};
    int64_t b_strides[kMaxRank] = {};
};

// out[i] = a[offset_a(i)] op b[offset_b(i)], i split into out's coordinates.
template <typename T>
struct BroadcastBinaryBody {
    BinaryOp op;
    const T* a;
    const T* b;
    T* out;
    BroadcastLayout layout;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        int64_t a_offset = 0, b_offset = 0, rest = i;
        for (int axis = layout.rank - 1; axis >= 0; --axis) {
            const int64_t index = rest % layout.sizes[axis];
            rest /= layout.sizes[axis];
            a_offset += index * layout.a_strides[axis];
            b_offset += index * layout.b_strides[axis];
        }
        out[i] = binary_value(op, a[a_offset], b[b_offset]);
    }
};

// out[i] = keep[offset_keep(i)] != 0 ? x[i] : fill, keep broadcast to out's shape (the
// layout's a_strides are keep's). A select, not x · keep: x may hold ±inf where keep is 0.
template <typename T>
struct KeepWhereBody {
    const T* x;
    const T* keep;
    T fill;
    T* out;
    BroadcastLayout layout;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        int64_t keep_offset = 0, rest = i;
        for (int axis = layout.rank - 1; axis >= 0; --axis) {
            keep_offset += (rest % layout.sizes[axis]) * layout.a_strides[axis];
            rest /= layout.sizes[axis];
        }
        out[i] = keep[keep_offset] != T(0) ? x[i] : fill;
    }
};

// Row r of x [rows, columns] has a nonzero entry; else the row is recorded (device_errors.h)
// with `check`, the host's number for the message that names it. One warp per row.
template <typename T>
struct NonzeroRowBody {
    const T* x;
    int64_t columns, check;
    DeviceErrorRecord* errors;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* row = x + r * columns;
        const int64_t nonzero = warp.sum<int64_t>([&](int lane) {
            int64_t count = 0;
            for (int64_t c = lane; c < columns; c += kWarpSize) count += row[c] != T(0) ? 1 : 0;
            return count;
        });
        warp.each([&](int lane) {
            if (lane == 0 && nonzero == 0) record_bad_index(errors, DeviceErrorOp::EmptyRow, r, check);
        });
    }
};

}  // namespace nce::cuda
