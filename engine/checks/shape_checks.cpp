#include "engine/checks/checks.h"

namespace nce::checks {
namespace {

// One standard normal input per shape.
std::vector<Tensor> normal_inputs(Generator& generator, const std::vector<Shape>& shapes) {
    std::vector<Tensor> inputs;
    for (const Shape& shape : shapes) inputs.push_back(normal(generator, shape));
    return inputs;
}

void add_reshape_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x, target;
    };
    for (const Case& c : {Case{"[2,3,4] -> [6,4]", {2, 3, 4}, {6, 4}},
                          Case{"[3,4] -> [-1] (flatten)", {3, 4}, {-1}},
                          Case{"[12] -> [2,2,3]", {12}, {2, 2, 3}}}) {
        registry.add({"reshape", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, {c.x}); },
                      [target = c.target](const std::vector<Var>& x) { return reshape(x[0], target); }});
    }
}

void add_permute_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        std::vector<int64_t> axes;
    };
    for (const Case& c : {Case{"[2,3,4] axes (2,0,1)", {2, 3, 4}, {2, 0, 1}},
                          Case{"[2,3,4] axes (-1,0,1)", {2, 3, 4}, {-1, 0, 1}},
                          Case{"[2,3,2,3] axes (1,3,0,2)", {2, 3, 2, 3}, {1, 3, 0, 2}}}) {
        registry.add({"permute", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, {c.x}); },
                      [axes = c.axes](const std::vector<Var>& x) { return permute(x[0], axes); }});
    }
}

void add_transpose_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        int64_t axis_a, axis_b;
    };
    for (const Case& c : {Case{"[3,4] axes 0,1", {3, 4}, 0, 1},
                          Case{"[2,3,4] axes 0,2", {2, 3, 4}, 0, 2},
                          Case{"[2,3,4,2] axes -1,1", {2, 3, 4, 2}, -1, 1}}) {
        registry.add({"transpose", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, {c.x}); },
                      [c](const std::vector<Var>& x) { return transpose(x[0], c.axis_a, c.axis_b); }});
    }
}

void add_slice_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        int64_t axis, start, end;
    };
    for (const Case& c : {Case{"[5,4] axis 0 [1,4)", {5, 4}, 0, 1, 4},
                          Case{"[2,6,3] axis 1 [2,5)", {2, 6, 3}, 1, 2, 5},
                          Case{"[4,5] axis -1 [3,5)", {4, 5}, -1, 3, 5}}) {
        registry.add({"slice", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, {c.x}); },
                      [c](const std::vector<Var>& x) { return slice(x[0], c.axis, c.start, c.end); }});
    }
}

void add_concat_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        std::vector<Shape> parts;
        int64_t axis;
    };
    for (const Case& c : {Case{"[2,3] [4,3] [1,3] axis 0", {{2, 3}, {4, 3}, {1, 3}}, 0},
                          Case{"[2,3,2] [2,1,2] axis 1", {{2, 3, 2}, {2, 1, 2}}, 1},
                          Case{"[3,2] [3,4] axis -1", {{3, 2}, {3, 4}}, -1}}) {
        registry.add({"concat", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, c.parts); },
                      [axis = c.axis](const std::vector<Var>& x) { return concat(x, axis); }});
    }
}

void add_stack_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        std::vector<Shape> parts;
        int64_t axis;
    };
    for (const Case& c : {Case{"3 x [2,3] axis 0", {{2, 3}, {2, 3}, {2, 3}}, 0},
                          Case{"2 x [2,3] axis 2", {{2, 3}, {2, 3}}, 2},
                          Case{"2 x [4] axis -1", {{4}, {4}}, -1}}) {
        registry.add({"stack", c.description,
                      [c](Generator& g, Dtype) { return normal_inputs(g, c.parts); },
                      [axis = c.axis](const std::vector<Var>& x) { return stack(x, axis); }});
    }
}

}  // namespace

void add_shape_checks(CheckRegistry& registry) {
    add_reshape_checks(registry);
    add_permute_checks(registry);
    add_transpose_checks(registry);
    add_slice_checks(registry);
    add_concat_checks(registry);
    add_stack_checks(registry);
}

}  // namespace nce::checks
