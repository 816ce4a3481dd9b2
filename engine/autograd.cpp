#include "engine/autograd.h"

#include <unordered_map>

#include "engine/tensor_math.h"

namespace nce {

// Each input node this node held the last reference to is emptied (its closure first, while
// `next` still keeps the inputs a closure may capture, then its inputs moved onto the stack)
// before it is destroyed, so no destructor reaches another node.
Node::~Node() {
    backward = nullptr;
    std::vector<std::shared_ptr<Node>> pending = std::move(next);
    while (!pending.empty()) {
        std::shared_ptr<Node> node = std::move(pending.back());
        pending.pop_back();
        if (node == nullptr || node.use_count() != 1) continue;
        node->backward = nullptr;
        for (std::shared_ptr<Node>& input : node->next) pending.push_back(std::move(input));
        node->next.clear();
    }
}

namespace {

thread_local bool grad_mode = true;
thread_local bool keep_values_mode = false;

}  // namespace

bool grad_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }
bool keeping_values() { return keep_values_mode; }
KeepValuesGuard::KeepValuesGuard() : previous_(keep_values_mode) { keep_values_mode = true; }
KeepValuesGuard::~KeepValuesGuard() { keep_values_mode = previous_; }

Var::Var(Tensor value, bool requires_grad) : value_(std::move(value)) {
    if (requires_grad) {
        check_floating(value_, "parameter", "value");
        node_ = std::make_shared<Node>();
        node_->op = "leaf";
        node_->leaf_grad = std::make_shared<Tensor>();
        if (keep_values_mode) node_->value = value_;
    }
}

Var Var::from_op(std::string op, Tensor value, const std::vector<Var>& inputs, BackwardFn backward) {
    Var out(std::move(value));
    if (!grad_mode) return out;
    bool any = false;
    for (const Var& input : inputs) any = any || input.requires_grad();
    if (!any) return out;
    auto node = std::make_shared<Node>();
    node->op = std::move(op);
    node->backward = std::move(backward);
    if (keep_values_mode) node->value = out.value_;
    for (const Var& input : inputs) {
        if (keep_values_mode) node->constant_inputs.push_back(input.node_ ? Tensor() : input.value_);
        node->next.push_back(input.node_);
        node->input_shapes.push_back(input.shape());
        node->input_dtypes.push_back(input.dtype());
    }
    out.node_ = std::move(node);
    return out;
}

Tensor Var::grad() const {
    if (is_leaf()) return *node_->leaf_grad;
    return node_ && node_->retained_grad ? *node_->retained_grad : Tensor();
}

void Var::zero_grad() {
    if (is_leaf()) *node_->leaf_grad = Tensor();
    if (node_ && node_->retained_grad) *node_->retained_grad = Tensor();
}

void Var::retain_grad() const {
    NCE_CHECK(node_ != nullptr, "retain_grad: this Var requires no gradient (a constant), so none reaches it");
    if (!is_leaf() && !node_->retained_grad) node_->retained_grad = std::make_shared<Tensor>();
}

void Var::register_hook(GradHook hook) const {
    NCE_CHECK(node_ != nullptr, "register_hook: this Var requires no gradient (a constant), so none reaches it");
    node_->hooks.push_back(std::move(hook));
}

void Var::set_value(Tensor value) {
    NCE_CHECK(value.shape() == value_.shape() && value.dtype() == value_.dtype(),
              "set_value: new value {} {} does not match {} {}", shape_string(value.shape()), dtype_name(value.dtype()),
              shape_string(value_.shape()), dtype_name(value_.dtype()));
    value_ = std::move(value);
}

void Var::set_grad(Tensor grad) {
    NCE_CHECK(is_leaf(), "set_grad: this Var is not a leaf parameter (a constant or an op's output has no gradient "
                         "slot); call it on a Var made with Var::parameter");
    NCE_CHECK(grad.defined(), "set_grad: the gradient is an undefined tensor; to clear a gradient use zero_grad()");
    NCE_CHECK(grad.shape() == value_.shape() && grad.dtype() == value_.dtype() && grad.device() == value_.device(),
              "set_grad: gradient {} {} does not match the parameter {} {}", shape_string(grad.shape()),
              dtype_name(grad.dtype()), shape_string(value_.shape()), dtype_name(value_.dtype()));
    *node_->leaf_grad = std::move(grad);
}

namespace {

// A kept gradient (a leaf's, or a retained one) owns its tensor: the one reaching it may be
// shared with other gradients (add passes dy to both inputs), so it is copied, not kept,
// unless this handle is the storage's only one (nothing else can see it change then).
void accumulate(Tensor& slot, Tensor grad) {
    if (slot.defined())
        add_inplace(slot, grad);
    else if (grad.use_count() == 1)
        slot = std::move(grad);
    else
        slot = grad.clone();
}

// The node's hooks in order, each seeing the gradient the one before left.
void run_hooks(const Node& node, Tensor& grad) {
    for (const GradHook& hook : node.hooks) {
        Tensor replaced = hook(grad);
        if (!replaced.defined()) continue;
        NCE_CHECK(replaced.shape() == grad.shape() && replaced.dtype() == grad.dtype(),
                  "backward: a hook on the output of '{}' returned a gradient {} {} for one of {} {}", node.op,
                  shape_string(replaced.shape()), dtype_name(replaced.dtype()), shape_string(grad.shape()),
                  dtype_name(grad.dtype()));
        grad = std::move(replaced);
    }
}

}  // namespace

void Var::backward(bool retain_graph) const {
    NCE_CHECK(value_.numel() == 1,
              "backward: the output has shape {}; pass an output gradient of that shape, or reduce it to one "
              "element (sum, mean) first",
              shape_string(value_.shape()));
    backward(Tensor::full(value_.shape(), 1.0, value_.dtype(), value_.device()), retain_graph);
}

void Var::backward(const Tensor& output_grad, bool retain_graph) const {
    NCE_CHECK(node_ != nullptr, "backward: this value does not depend on anything that requires a gradient");
    NCE_CHECK(output_grad.shape() == value_.shape() && output_grad.dtype() == value_.dtype(),
              "backward: output gradient {} {} does not match the output {} {}", shape_string(output_grad.shape()),
              dtype_name(output_grad.dtype()), shape_string(value_.shape()), dtype_name(value_.dtype()));

    // Count, for every node reachable from the output, how many edges lead into it; a
    // node runs once all of them have delivered their gradient (Kahn's order).
    std::unordered_map<Node*, int> pending;
    std::vector<Node*> stack{node_.get()};
    pending[node_.get()] = 0;
    while (!stack.empty()) {
        Node* node = stack.back();
        stack.pop_back();
        for (const auto& next : node->next) {
            if (!next) continue;
            auto [it, inserted] = pending.try_emplace(next.get(), 0);
            it->second++;
            if (inserted) stack.push_back(next.get());
        }
    }

    // A node is ready once every edge into it has been walked, whether or not a gradient
    // came along it: a backward may return "no gradient" for an input, and that input's node
    // must still release its own inputs, or a node reachable from it and along another path
    // would wait forever (and its gradient from the other path would be lost).
    std::unordered_map<Node*, Tensor> grads;
    grads[node_.get()] = output_grad;
    std::vector<Node*> ready{node_.get()};
    while (!ready.empty()) {
        Node* node = ready.back();
        ready.pop_back();
        Tensor grad;  // undefined when nothing flowed into this node
        if (auto it = grads.find(node); it != grads.end()) {
            grad = std::move(it->second);
            grads.erase(it);
        }
        if (grad.defined()) run_hooks(*node, grad);
        if (node->leaf_grad) {
            if (grad.defined()) accumulate(*node->leaf_grad, std::move(grad));  // its last use
            continue;
        }
        if (node->retained_grad && grad.defined()) accumulate(*node->retained_grad, grad);
        if (node->value.defined()) node->grad = grad;  // a node made under KeepValuesGuard shows it
        Grads input_grads(node->next.size());  // all undefined: what a node with no gradient passes on
        if (grad.defined()) {
            NCE_CHECK(!node->freed,
                      "backward: the graph through '{}' was freed by an earlier backward; pass retain_graph=true to "
                      "the first backward to run it again",
                      node->op);
            input_grads = node->backward(grad);
            NCE_CHECK(input_grads.size() == node->next.size(), "backward of '{}' returned {} gradients for {} inputs",
                      node->op, input_grads.size(), node->next.size());
            if (!retain_graph) {
                node->backward = nullptr;
                node->freed = true;
            }
        }
        for (size_t i = 0; i < node->next.size(); ++i) {
            Node* next = node->next[i].get();
            if (!next) continue;
            Tensor& g = input_grads[i];
            if (g.defined()) {
                NCE_CHECK(g.shape() == node->input_shapes[i] && g.dtype() == node->input_dtypes[i],
                          "backward of '{}' returned a gradient of shape {} and dtype {} for input {} of shape {} and "
                          "dtype {}",
                          node->op,
                          shape_string(g.shape()), dtype_name(g.dtype()), i, shape_string(node->input_shapes[i]),
                          dtype_name(node->input_dtypes[i]));
                auto it = grads.find(next);
                // Sums are out of place: a gradient tensor may be shared by several inputs.
                if (it == grads.end())
                    grads.emplace(next, std::move(g));
                else
                    it->second = it->second + g;
            }
            if (--pending[next] == 0) ready.push_back(next);
        }
    }
}

}  // namespace nce
