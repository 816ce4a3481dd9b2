# The answer key of ../infonce_exercise.ipynb, for teachers and for run_notebooks.py, which
# runs the notebook three ways: as stored (every check says "not written yet"), with the
# cells below put in place of its "Your turn" cells (every check must say right), and with a
# typical wrong answer (the checks must say wrong and name the entry). Each part starts with
# a line "# exercise: NAME" or "# wrong: NAME", NAME being the cell's "exercise" metadata.

# exercise: logit_gradient
def logit_gradient(l):
    """dL/dl for L = mean_i (lse_j l_ij - l_ii); l: [N, N+M] -> [N, N+M]."""
    P = np.exp(l - lse_rows(l)[:, None])   # each row's softmax
    Y = np.eye(*l.shape)                   # the positive of row i is column i
    return (P - Y) / l.shape[0]

# exercise: backward
def backward(dy, q, p, neg, log_tau):
    """(dq [N, d], dp [N, d], dneg [M, d], dlog_tau), each times dy; use logit_gradient."""
    tau = np.exp(log_tau)
    C = np.concatenate([p, neg])
    l = q @ C.T / tau
    G = logit_gradient(l)
    dq = G @ C / tau
    dC = G.T @ q / tau
    dlog_tau = -np.sum(G * l)
    return dy * dq, dy * dC[:len(q)], dy * dC[len(q):], dy * dlog_tau

# wrong: logit_gradient
def logit_gradient(l):
    """The mean forgotten: N times too large."""
    return np.exp(l - lse_rows(l)[:, None]) - np.eye(*l.shape)

# wrong: backward
def backward(dy, q, p, neg, log_tau):
    """A positive treated as its own query's alone: dp from row i only, not column i."""
    tau = np.exp(log_tau)
    C = np.concatenate([p, neg])
    l = q @ C.T / tau
    G = logit_gradient(l)
    dC = G.T @ q / tau
    dp = np.diag(G)[:, None] * q / tau
    return dy * (G @ C / tau), dy * dp, dy * dC[len(q):], dy * -np.sum(G * l)
