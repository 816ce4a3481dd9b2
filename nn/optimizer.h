// Optimizers: SGD, Adam and AdamW, each a transcription of PyTorch's torch.optim (the
// single-tensor path of version 1.13) so that the same run takes the same steps here and there.
//
// An optimizer holds pointers to the parameters (leaf Vars owned by a Module) and, for each
// one, the state its rule keeps (a momentum buffer, moment estimates). step() reads each
// parameter's accumulated gradient, updates that state and writes the new value with
// Var::set_value. A parameter whose gradient is undefined (no backward reached it since
// zero_grad) is skipped, state and all, as PyTorch skips a parameter whose .grad is None.
//
// Every tensor of a parameter's state has the parameter's shape and dtype. Updates make new
// tensors rather than writing into old ones, so the tensors state() hands out stay as they
// were when it was called.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/nce.h"

namespace nce::nn {

// An optimizer's state, for a checkpoint. Tensors are keyed "<parameter index>.<name>", the
// index counting in the order of the parameter list and the names being PyTorch's
// ("0.momentum_buffer", "3.exp_avg", "3.step"); a parameter that has never been updated has
// no entries. step_count is the number of step() calls.
struct OptimizerState {
    int64_t step_count = 0;
    std::map<std::string, Tensor> tensors;
};

class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    // Updates every parameter that has a gradient, then counts the step.
    void step();
    // Clears every parameter's gradient (to undefined, like PyTorch's set_to_none=True).
    void zero_grad();

    double learning_rate() const { return learning_rate_; }
    // A schedule calls this before each step (nn/schedule.h). Must be finite and >= 0.
    void set_learning_rate(double learning_rate);

    int64_t step_count() const { return step_count_; }
    const std::vector<Var*>& parameters() const { return parameters_; }
    // "SGD", "Adam" or "AdamW", for messages.
    const std::string& name() const { return name_; }

    OptimizerState state() const;
    // Restores a state saved by state() of the same kind of optimizer over the same
    // parameters. Tensors are copied and cast to each parameter's dtype and device. All or
    // nothing: a state that does not fit throws nce::Error and leaves this optimizer as it was.
    void load_state(const OptimizerState& state);

protected:
    // Checks the parameter list: not empty, no null, no duplicate, every one a leaf.
    Optimizer(std::string name, std::vector<Var*> parameters, double learning_rate);

    // One parameter's update, from its gradient (same shape and dtype as its value).
    virtual void update(size_t index, Var& parameter, const Tensor& grad) = 0;
    // The state of parameter `index` by PyTorch's names; empty before its first update.
    virtual std::map<std::string, Tensor> parameter_state(size_t index) const = 0;
    // Replaces the state of every parameter: entries[i] holds parameter i's tensors by name
    // (empty: no state yet). Throws, changing nothing, on a name or tensor that does not fit.
    virtual void load_parameter_states(const std::vector<std::map<std::string, Tensor>>& entries) = 0;

    // A loaded tensor for state `name` of parameter `index`: checked to have `expected`
    // shape and a float dtype, then copied to the parameter's dtype and device.
    Tensor loaded_tensor(size_t index, const std::string& name, const Tensor& tensor, const Shape& expected) const;
    // Throws the error for an entry this optimizer does not keep.
    [[noreturn]] void fail_unknown_entry(size_t index, const std::string& name) const;

private:
    std::string name_;
    std::vector<Var*> parameters_;
    double learning_rate_;
    int64_t step_count_ = 0;
};

// ---- SGD ----

struct SGDOptions {
    // PyTorch's SGD has no default learning rate, so neither does this: set it.
    double learning_rate = std::numeric_limits<double>::quiet_NaN();
    double momentum = 0.0;
    double dampening = 0.0;
    double weight_decay = 0.0;  // L2 penalty added to the gradient
    bool nesterov = false;      // needs momentum > 0 and dampening == 0
};

// State per parameter: "momentum_buffer" (only with momentum > 0).
class SGD : public Optimizer {
public:
    SGD(std::vector<Var*> parameters, SGDOptions options);
    const SGDOptions& options() const { return options_; }

private:
    void update(size_t index, Var& parameter, const Tensor& grad) override;
    std::map<std::string, Tensor> parameter_state(size_t index) const override;
    void load_parameter_states(const std::vector<std::map<std::string, Tensor>>& entries) override;

    SGDOptions options_;
    std::vector<Tensor> momentum_buffers_;  // one per parameter; undefined until its first update
};

// ---- Adam and AdamW ----

struct AdamOptions {
    double learning_rate = 1e-3;
    double beta1 = 0.9;    // decay of the first-moment average
    double beta2 = 0.999;  // decay of the second-moment average
    double eps = 1e-8;
    double weight_decay = 0.0;  // Adam: L2 penalty added to the gradient
    bool amsgrad = false;       // divide by the largest second moment seen so far
};

// The same fields with AdamW's default weight decay.
struct AdamWOptions {
    double learning_rate = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.01;  // AdamW: decoupled, p -= lr · weight_decay · p before the Adam step
    bool amsgrad = false;
};

// State per parameter: "step" (int64 scalar: this parameter's own update count), "exp_avg",
// "exp_avg_sq", and "max_exp_avg_sq" with amsgrad.
class Adam : public Optimizer {
public:
    Adam(std::vector<Var*> parameters, AdamOptions options = {});
    const AdamOptions& options() const { return options_; }

protected:
    // How weight decay enters: as an L2 term in the gradient (Adam), or by shrinking the
    // parameter directly (AdamW).
    enum class WeightDecay { L2InGradient, Decoupled };
    Adam(std::string name, std::vector<Var*> parameters, AdamOptions options, WeightDecay weight_decay);

private:
    void update(size_t index, Var& parameter, const Tensor& grad) override;
    std::map<std::string, Tensor> parameter_state(size_t index) const override;
    void load_parameter_states(const std::vector<std::map<std::string, Tensor>>& entries) override;

    struct Moments {
        int64_t step = 0;        // updates this parameter has had (the bias corrections count from 1)
        Tensor exp_avg;          // first moment, undefined until the first update
        Tensor exp_avg_sq;       // second moment
        Tensor max_exp_avg_sq;   // amsgrad only
    };

    AdamOptions options_;
    WeightDecay weight_decay_mode_;
    std::vector<Moments> moments_;  // one per parameter
};

class AdamW : public Adam {
public:
    AdamW(std::vector<Var*> parameters, AdamWOptions options = {});
};

}  // namespace nce::nn
