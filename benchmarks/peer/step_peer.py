#!/usr/bin/python3
"""PyTorch's side of `nce bench step`: the same models, the same step, one JSON line.

Run with a PyTorch on the path: Debian's /usr/bin/python3 (python3-torch 1.13), or PyPI's
current one with PYTHONPATH=$(bash scripts/python_peers.sh sentence-transformers) python3
(minilm needs that one: it builds transformers' BertModel):

    python3 benchmarks/peer/step_peer.py --model sig_predictor|text_encoder|minilm \
        [--batch B] [--seq T] [--threads N] [--reps R] [--warmup W] [--autocast none|bfloat16] \
        [--device cpu|cuda] [--init FOLDER] [--encode]

A step is: zero the gradients (set to None) -> encode -> loss -> backward -> AdamW step
(lr 1e-4, weight decay 0.01), exactly what apps/bench_step_command.cpp times:

  sig_predictor  features [B, T, 2048] -> Linear(2048, 512) -> 2 x TransformerEncoderLayer
                 (d_model 512, 8 heads, feed-forward 2048, dropout 0.1, relu, post-norm,
                 batch_first) -> mean over real tokens -> Linear(512, 256) -> L2-normalise;
                 InfoNCE against B fixed unit target rows, learnable log-temperature
                 (initial log 0.07, tau = max(exp(log_tau), 1e-4)). Defaults B = 64, T = 64.
  text_encoder   ids [B, T] < 8000 -> token + position Embedding(., 128) -> 2 x layer
                 (d_model 128, 4 heads, feed-forward 512, dropout 0.1) -> mean over real
                 tokens -> L2-normalise; symmetric InfoNCE over B queries and B passages at
                 tau 0.05. Defaults B = 32, T = 32.
  minilm         transformers' BertModel with all-MiniLM-L6-v2's config (random weights, or
                 the folder's with --init), mean over real tokens, L2-normalise; InfoNCE of
                 B queries against B passages at tau 0.05 (sentence-transformers'
                 MultipleNegativesRankingLoss). Defaults B = 32 pairs, T = 128.

--encode times encoding B texts instead: eval mode under torch.inference_mode(), what
sentence-transformers' encode does per batch; samples_per_s is texts per second.

--autocast bfloat16 runs the encoding and the loss under torch.autocast("cpu",
dtype=torch.bfloat16) (linear layers and matmuls in bfloat16 through oneDNN, softmax, layer
norm and cross_entropy in float32, the weights and AdamW in float32): the peer of
`nce bench step --gemm-precision bfloat16`.

--device cuda: the model and the inputs on the GPU (PyTorch eager, TF32 off as PyTorch's
default), the peer of `nce bench step --device cuda`; loss.item() after the AdamW step waits
for the GPU, so each timed step is complete.

Row r of every mask keeps T - (r mod ceil(T/2)) tokens, as on the nce side. The first
--warmup steps are not timed. peak_rss_mib is getrusage's ru_maxrss, and cpu_ms the median
CPU time of a step over all threads (time.process_time), as on the nce side.
The settings the performance issue asks for (the driver sets them): OPENBLAS_CORETYPE
unset, ATEN_CPU_CAPABILITY=avx512, OMP_WAIT_POLICY=PASSIVE.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIG_IN_DIM, SIG_OUT_DIM, TEXT_VOCABULARY, MINILM_VOCABULARY = 2048, 256, 8000, 30522


def openblas_library():
    """The OpenBLAS that this process loaded (PyTorch's BLAS on Debian), or None."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libopenblas" in line}
    for path in sorted(paths) + glob.glob("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas*.so*"):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def blas_core_name(library):
    if library is None:
        return "unknown"
    library.openblas_get_corename.restype = ctypes.c_char_p
    return library.openblas_get_corename().decode()


def median_of(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else 0.5 * (ordered[middle - 1] + ordered[middle])


def padding_mask(rows, seq):
    """[rows, seq] bool, True = real token: row r keeps its first seq - (r mod ceil(seq/2))."""
    period = (seq + 1) // 2
    mask = torch.zeros(rows, seq, dtype=torch.bool)
    for r in range(rows):
        mask[r, : seq - r % period] = True
    return mask


def masked_mean(tokens, mask):
    weights = mask.to(tokens.dtype).unsqueeze(-1)  # [B, T, 1]
    return (tokens * weights).sum(1) / weights.sum(1)


class Float32LayerNorm(nn.LayerNorm):
    """LayerNorm on a float32 copy of its input. PyTorch 1.13's CPU autocast hands layer_norm a
    bfloat16 input with float32 weights and stops ("expected scalar type BFloat16 but found
    Float"); a user works around it this way, which is also what nce does (layer norm in
    float32). Without autocast the input is float32 already and nothing is copied."""

    def forward(self, x):
        return F.layer_norm(x.float(), self.normalized_shape, self.weight, self.bias, self.eps)


def encoder(d_model, heads, feed_forward):
    layer = nn.TransformerEncoderLayer(d_model, heads, feed_forward, dropout=0.1, batch_first=True)
    layer.norm1, layer.norm2 = Float32LayerNorm(d_model), Float32LayerNorm(d_model)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


class SigPredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_proj = nn.Linear(SIG_IN_DIM, 512)
        self.encoder = encoder(512, 8, 2048)
        self.output_proj = nn.Linear(512, SIG_OUT_DIM)
        self.log_tau = nn.Parameter(torch.tensor([math.log(0.07)]))

    def forward(self, features, mask):
        tokens = self.encoder(self.input_proj(features), src_key_padding_mask=~mask)
        return F.normalize(self.output_proj(masked_mean(tokens, mask)), dim=-1)


class TextEncoder(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.token_embedding = nn.Embedding(TEXT_VOCABULARY, 128)
        self.position_embedding = nn.Embedding(seq, 128)
        self.encoder = encoder(128, 4, 512)

    def forward(self, ids, mask):
        positions = torch.arange(ids.shape[1], device=ids.device)
        embedded = self.token_embedding(ids) + self.position_embedding(positions)
        tokens = self.encoder(embedded, src_key_padding_mask=~mask)
        return F.normalize(masked_mean(tokens, mask), dim=-1)


class MiniLm(nn.Module):
    """all-MiniLM-L6-v2 as sentence-transformers runs it: BertModel, mean pooling, normalise."""

    def __init__(self, init):
        super().__init__()
        from transformers import BertConfig, BertModel
        if init:
            self.bert = BertModel.from_pretrained(init, add_pooling_layer=False)
        else:
            config = BertConfig(vocab_size=MINILM_VOCABULARY, hidden_size=384, num_hidden_layers=6,
                                num_attention_heads=12, intermediate_size=1536, hidden_act="gelu",
                                max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12)
            self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, ids, mask):
        tokens = self.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        return F.normalize(masked_mean(tokens, mask), dim=-1)


def infonce(q, p, tau):
    labels = torch.arange(q.shape[0], device=q.device)
    return F.cross_entropy(q @ p.t() / tau, labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["sig_predictor", "text_encoder", "minilm"], default="sig_predictor")
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--seq", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--autocast", choices=["none", "bfloat16"], default="none")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--init", default="")
    parser.add_argument("--encode", action="store_true")
    args = parser.parse_args()
    sig, minilm = args.model == "sig_predictor", args.model == "minilm"
    batch = args.batch or (64 if sig else 32)
    seq = args.seq or (64 if sig else 128 if minilm else 32)
    if batch < 2 or seq < 1 or args.reps < 1 or args.warmup < 0:
        sys.exit("step_peer.py: error: --batch must be >= 2, --seq >= 1, --reps >= 1, --warmup >= 0")

    library = openblas_library()
    threads = args.threads or os.cpu_count()
    torch.set_num_threads(threads)
    if library is not None:
        library.openblas_set_num_threads(ctypes.c_int(threads))
    torch.manual_seed(7)

    mask = padding_mask(batch, seq)
    if sig:
        model = SigPredictor()
        features = torch.randn(batch, seq, SIG_IN_DIM)
        targets = F.normalize(torch.randn(batch, SIG_OUT_DIM), dim=-1)
    else:
        model = MiniLm(args.init) if minilm else TextEncoder(seq)
        vocabulary = MINILM_VOCABULARY if minilm else TEXT_VOCABULARY
        queries = torch.randint(1, vocabulary, (batch, seq))
        passages = torch.randint(1, vocabulary, (batch, seq))
    device = torch.device(args.device)
    model.to(device)
    mask = mask.to(device)
    if sig:
        features, targets = features.to(device), targets.to(device)
    else:
        queries, passages = queries.to(device), passages.to(device)
    model.train(not args.encode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def encode():
        with torch.inference_mode(), torch.autocast(args.device, dtype=torch.bfloat16,
                                                     enabled=args.autocast == "bfloat16"):
            return model(queries, mask)[0, 0].item()

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.autocast == "bfloat16"):
            if sig:
                tau = model.log_tau.exp().clamp(min=1e-4)
                loss = infonce(model(features, mask), targets, tau)
            elif minilm:
                loss = infonce(model(queries, mask), model(passages, mask), 0.05)
            else:
                q, p = model(queries, mask), model(passages, mask)
                loss = 0.5 * (infonce(q, p, 0.05) + infonce(p, q, 0.05))
        loss.backward()
        optimizer.step()
        return loss.item()

    step = encode if args.encode else train_step

    loss = 0.0
    for _ in range(args.warmup):
        loss = step()
    milliseconds, cpu_milliseconds = [], []
    for _ in range(args.reps):
        cpu_start, start = time.process_time(), time.perf_counter()
        loss = step()
        milliseconds.append((time.perf_counter() - start) * 1000.0)
        cpu_milliseconds.append((time.process_time() - cpu_start) * 1000.0)
    ordered = sorted(milliseconds)
    median = median_of(milliseconds)
    print(json.dumps({
        "bench": "step", "side": "torch", "name": args.model, "model": args.model, "batch": batch, "seq": seq,
        "dtype": "float32", "autocast": args.autocast, "device": args.device, "threads": torch.get_num_threads(), "reps": args.reps,
        "median_ms": median, "min_ms": ordered[0], "samples_per_s": batch / (median / 1000.0),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "blas_core": blas_core_name(library), "cpu_ms": median_of(cpu_milliseconds), "last_loss": loss, "times_ms": milliseconds,
        "torch": torch.__version__, "aten_cpu_capability": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "mode": "encode" if args.encode else "train", "weights": args.init or "random",
    }))


if __name__ == "__main__":
    main()
