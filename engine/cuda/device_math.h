// Math for kernel bodies, one overload per float type, usable on host and device: the C
// library's float and double functions (expf / exp, ...), which both nvcc and the host
// compiler provide under the same names, so a body never depends on std:: overloads that
// device code may lack.
#pragma once
#include <math.h>

#include "engine/cuda/host_device.h"

namespace nce::cuda::math {

NCE_HOST_DEVICE inline float exp(float x) { return ::expf(x); }
NCE_HOST_DEVICE inline double exp(double x) { return ::exp(x); }
NCE_HOST_DEVICE inline float log(float x) { return ::logf(x); }
NCE_HOST_DEVICE inline double log(double x) { return ::log(x); }
NCE_HOST_DEVICE inline float sqrt(float x) { return ::sqrtf(x); }
NCE_HOST_DEVICE inline double sqrt(double x) { return ::sqrt(x); }
NCE_HOST_DEVICE inline float tanh(float x) { return ::tanhf(x); }
NCE_HOST_DEVICE inline double tanh(double x) { return ::tanh(x); }
NCE_HOST_DEVICE inline float erf(float x) { return ::erff(x); }
NCE_HOST_DEVICE inline double erf(double x) { return ::erf(x); }
NCE_HOST_DEVICE inline float abs(float x) { return ::fabsf(x); }
NCE_HOST_DEVICE inline double abs(double x) { return ::fabs(x); }
NCE_HOST_DEVICE inline float pow(float a, float b) { return ::powf(a, b); }
NCE_HOST_DEVICE inline double pow(double a, double b) { return ::pow(a, b); }

// NaN is the one value unequal to itself (the build never uses fast-math).
template <typename T>
NCE_HOST_DEVICE inline bool is_nan(T x) {
    return x != x;
}

}  // namespace nce::cuda::math
