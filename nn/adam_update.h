// One Adam / AdamW update of one parameter, two ways that agree to the last bits:
//
//   reference_adam_update  the rule written with Tensor-level math, one operation per line
//                          of the derivation in nn/optimizer.cpp (about 14 sweeps over the
//                          parameter, each making a new tensor);
//   fused_adam_update      the same operations in the same order, element by element in one
//                          sweep (Backend::adam_step: a loop on the CPU, one launch on a GPU):
//                          it reads p, g and the moments once and writes the new ones once.
//                          A training step spends its optimizer time here.
//
// Both round every intermediate to the parameter's dtype as the reference does (each
// scalar is cast to that dtype first); they differ only where the reference's vectorised
// square root or division rounds the last bit differently from std::sqrt and '/', a few
// units in the last place after several steps. tests/test_optimizer.cpp checks that bound. Both make new tensors for everything they return and
// leave their inputs untouched, as Optimizer::state() promises.
#pragma once
#include "engine/nce.h"

namespace nce::nn {

struct AdamHyperparameters {
    double learning_rate = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0;
    bool decoupled_weight_decay = false;  // AdamW: p · (1 - lr · weight_decay); Adam: g + weight_decay · p
    bool amsgrad = false;
    int64_t step = 1;                     // this update's number, from 1 (for the bias corrections)
};

struct AdamTensors {
    Tensor parameter;       // p
    Tensor exp_avg;         // first moment
    Tensor exp_avg_sq;      // second moment
    Tensor max_exp_avg_sq;  // amsgrad only, else undefined
};

// Returns the updated p and moments from p, g and the previous moments (all one shape and dtype).
AdamTensors reference_adam_update(const AdamTensors& previous, const Tensor& grad, const AdamHyperparameters& h);
AdamTensors fused_adam_update(const AdamTensors& previous, const Tensor& grad, const AdamHyperparameters& h);

}  // namespace nce::nn
