// Reverse-mode automatic differentiation.
//
// A Var is a tensor value plus, when it needs a gradient, the Node that made it. An op's
// forward computes its value with tensor math and records one Node whose backward maps the
// gradient of the output to the gradients of the inputs (the hand-derived formula, in a
// closure that captures only the tensors it needs). backward() walks the nodes from the
// output in topological order, sums the gradients reaching each node, and accumulates the
// gradients of leaf Vars (parameters) into their grad() until zero_grad().
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace nce {

// One gradient per input of an op, in order; an undefined Tensor means "no gradient".
using Grads = std::vector<Tensor>;
using BackwardFn = std::function<Grads(const Tensor& output_grad)>;
// Sees the gradient reaching a Var in a backward; a defined return replaces it from there on.
using GradHook = std::function<Tensor(const Tensor& grad)>;

struct Node {
    std::string op;                            // the op's name, for messages
    std::vector<std::shared_ptr<Node>> next;   // the node of each input; null where the input needs no gradient
    std::vector<Shape> input_shapes;           // to check the shapes and dtypes the backward returns
    std::vector<Dtype> input_dtypes;
    BackwardFn backward;                       // empty for a leaf's accumulator node
    std::shared_ptr<Tensor> leaf_grad;         // set for a leaf: where its gradient accumulates
    bool freed = false;                        // the backward closure was released after use
    std::shared_ptr<Tensor> retained_grad;     // set by Var::retain_grad(): a non-leaf's gradient accumulates here
    std::vector<GradHook> hooks;               // Var::register_hook(), run in order on the gradient reaching it
    // Kept only for a node made while a KeepValuesGuard is alive, to draw the graph with its
    // numbers (engine/graph_dot.h); undefined otherwise, so a graph holds no extra tensors.
    Tensor value;                              // the op's output (a leaf's value when it was made)
    Tensor grad;                               // dL/d(output) that reached this node in the last backward
    std::vector<Tensor> constant_inputs;       // the value of each input that needs no gradient, by position

    // Releases the graph below this node iteratively: a chain of a million ops (a deep model
    // unwinding after an error) would otherwise free itself one stack frame per node.
    ~Node();
};

class Var {
public:
    Var() = default;
    // A constant (requires_grad false) or a leaf that accumulates a gradient.
    explicit Var(Tensor value, bool requires_grad = false);
    static Var parameter(Tensor value) { return Var(std::move(value), true); }

    // Records an op: value computed by the forward, the inputs it read, and its backward.
    // When gradients are off (no_grad) or no input needs one, no node is made.
    static Var from_op(std::string op, Tensor value, const std::vector<Var>& inputs, BackwardFn backward);

    bool defined() const { return value_.defined(); }
    const Tensor& value() const { return value_; }
    const Shape& shape() const { return value_.shape(); }
    Dtype dtype() const { return value_.dtype(); }
    int64_t size(int64_t axis) const { return value_.size(axis); }
    bool requires_grad() const { return node_ != nullptr; }
    bool is_leaf() const { return node_ != nullptr && node_->leaf_grad != nullptr; }
    const std::shared_ptr<Node>& node() const { return node_; }

    // The accumulated gradient of a leaf, or of a non-leaf that retains its gradient
    // (undefined until a backward reaches it, and for any other Var).
    Tensor grad() const;
    void zero_grad();
    // From the next backward on, an op's output keeps (accumulates) the gradient reaching it,
    // as a leaf does; a no-op on a leaf. A Var that requires no gradient is an error.
    void retain_grad() const;
    bool retains_grad() const { return node_ != nullptr && (is_leaf() || node_->retained_grad != nullptr); }
    // hook(g) runs on the gradient g reaching this Var in every later backward, before a
    // leaf accumulates it or the op passes it on; a defined return (same shape and dtype)
    // replaces g. A Var that requires no gradient is an error.
    void register_hook(GradHook hook) const;
    // Replaces the leaf's value (an optimizer step), keeping its gradient slot.
    void set_value(Tensor value);
    // Replaces a leaf's accumulated gradient (gradient clipping rescales it). The leaf keeps
    // this very tensor: later backward passes add into it in place, so pass one that nothing
    // else holds. Same shape and dtype as the value; a non-leaf is an error.
    void set_grad(Tensor grad);

    // The same value, cut off from the graph.
    Var detach() const { return Var(value_); }

    // Back-propagates from a one-element output (gradient 1).
    void backward(bool retain_graph = false) const;
    // Back-propagates a given gradient of this output's shape.
    void backward(const Tensor& output_grad, bool retain_graph = false) const;

private:
    Tensor value_;
    std::shared_ptr<Node> node_;
};

// Gradients are recorded unless a NoGradGuard is alive on this thread.
bool grad_enabled();

class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

// While one is alive on this thread, every node made records its output value (Node::value)
// and, in a backward, the gradient reaching it (Node::grad): for drawing a small graph with
// its numbers (engine/graph_dot.h), not for training (it keeps every intermediate alive).
bool keeping_values();

class KeepValuesGuard {
public:
    KeepValuesGuard();
    ~KeepValuesGuard();
    KeepValuesGuard(const KeepValuesGuard&) = delete;
    KeepValuesGuard& operator=(const KeepValuesGuard&) = delete;

private:
    bool previous_;
};

}  // namespace nce
