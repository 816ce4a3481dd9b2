// The autograd graph as a picture: Graphviz DOT text for the nodes a Var depends on, which
// `dot -Tsvg` renders. Each op is a box with its name, output shape and dtype; each leaf
// (a parameter) and each constant input is an ellipse; edges run from an op's inputs to the
// op. With values, each tensor also shows its norm (its entries when it has at most four)
// and, after a backward, the norm of the gradient that reached it.
//
// Intermediate values and gradients, and the constant inputs' values and names, are kept
// only for a graph built while a KeepValuesGuard (engine/autograd.h) was alive; otherwise the
// picture shows the output's value, the named Vars' values and the leaves' accumulated
// gradients, and says nothing of the rest.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/autograd.h"

namespace nce {

struct DotOptions {
    bool with_values = false;                         // norms of values and gradients
    std::vector<std::pair<std::string, Var>> names;   // Vars to label by name ("q", "log_tau", "qid")
    std::string title;                                // the graph's caption; empty for none
};

// The same graph gives the same text, byte for byte: nodes are numbered in the order a
// depth-first walk from `output` finishes them (every input before the op that reads it,
// inputs in their order), so the output is the last node.
std::string to_dot(const Var& output, const DotOptions& options = {});

// `text` as the inside of a DOT double-quoted string: quotes and backslashes escaped, line
// breaks as \n, other control characters as spaces.
std::string dot_escape(std::string_view text);

}  // namespace nce
