// `import nce`: the engine, the losses, the models and retrieval from Python. The parts
// are bound in the order they depend on each other (a Var needs the Tensor, the ops need
// the Var, ...); bindings.h lists them.
#include "python/bindings.h"

PYBIND11_MODULE(nce, module) {
    module.doc() =
        "nce from Python: Tensors to and from NumPy, Vars with gradients, every engine op and every loss of the "
        "registry by its own name, the gradient checkers (gradcheck, check_backward), models, the tokenizer, BM25 "
        "and FAISS search. Engine errors arrive as ValueError (nce.Error) with the engine's one line.";
    module.attr("__version__") = NCE_VERSION;  // meson.build's project version
    using namespace nce::python;
    bind_errors(module);
    bind_tensor(module);
    bind_var(module);
    bind_ops(module);
    bind_function(module);
    bind_losses(module);
    bind_gradcheck(module);
    bind_check_backward(module);
    bind_tokenizer(module);  // before the models, whose embed() takes a Tokenizer
    bind_models(module);
    bind_search(module);
    bind_graph(module);
}
