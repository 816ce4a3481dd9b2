"""sentence-transformers' side of the fine-tuning comparison: the pretrained model an nce run
fine-tuned, fine-tuned again by sentence-transformers 6.x on exactly that run's training
queries, with that run's settings, and saved as a model folder for `nce train eval --versus`.

    PYTHONPATH=$(bash scripts/python_peers.sh sentence-transformers) \
        python3 benchmarks/peer/finetune_peer.py --run RUN --train TRAIN.csv --output FOLDER [--threads N]

RUN is the folder `nce train --init MODEL --train TRAIN.csv` wrote: its config.json gives the
model, the batch size, learning rate, warmup, schedule, steps, weight decay, gradient clipping,
seed, dropout, loss temperature and the query and passage lengths; its split.json gives the query ids
it trained on (the rows of TRAIN.csv with those query_id values; nce's validation slice of
the file is left out as nce left it out of training). benchmarks/peer/finetune_peer.sh runs
both sides and the comparison.

The step is what SentenceTransformerTrainer runs for MultipleNegativesRankingLoss: the
model in training mode (dropout on, at config.json's dropout as nce applies it: hidden states and attention), anchors and positives through SentenceTransformer's own
modules, batches in which no text appears twice (NoDuplicatesBatchSampler's packing, nce's
default), cross-entropy over the batch's in-batch similarities times scale = 1 / tau, AdamW
(decoupled weight decay on every parameter, as nce's), the gradient norm clipped, the
learning rate warmed up linearly then decayed by transformers' schedule of the name nce's
config gives (nce's schedules are written as transformers' are).
Written as a loop rather than through the trainer so that no `datasets` or `accelerate`
package is needed and every setting is visibly the run's. Queries are cut at nce's query
length and passages at its passage length (preprocess's max_length, as the trainer's data
collator passes it). Prints one JSON line: steps, seconds of the training loop, seconds per step.
"""
import argparse
import csv
import json
import os
import random
import sys
import time

import numpy as np
import torch
import transformers
from sentence_transformers import SentenceTransformer, losses


def training_rows(train_file, train_ids):
    """(anchor, first positive) of every query nce trained on, in file order: nce's infonce
    batches pair a query with its best answer, the first of its rows in a file without scores."""
    by_query = {}
    with open(train_file, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if "query_id" not in (reader.fieldnames or []):
            sys.exit(f"{train_file}: no query_id column; make the pairs with `nce data pairs`, which writes one")
        for row in reader:
            if row["query_id"] in train_ids:
                by_query.setdefault(row["query_id"], (row["anchor"], row["positive"]))
    return list(by_query.values())


def no_duplicate_batches(rows, batch_size, generator):
    """One epoch of batches in which no text appears twice, as sentence-transformers'
    NoDuplicatesBatchSampler packs them (the sampler its documentation pairs with
    MultipleNegativesRankingLoss) and as nce's batches are packed by default: the rows shuffled,
    each batch filled from the front of what is left with the rows sharing no text with it; a
    row that would repeat one waits for a later batch."""
    remaining = list(rows)
    generator.shuffle(remaining)
    while remaining:
        batch, texts, waiting = [], set(), []
        for row in remaining:
            if len(batch) < batch_size and texts.isdisjoint(row):
                batch.append(row)
                texts.update(row)
            else:
                waiting.append(row)
        yield batch
        remaining = waiting


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="the nce run folder (config.json, split.json)")
    parser.add_argument("--train", required=True, help="the pairs file the nce run read (--train)")
    parser.add_argument("--output", required=True, help="the model folder to write")
    parser.add_argument("--threads", type=int, default=int(os.environ.get("NCE_NUM_THREADS", "2")))
    args = parser.parse_args()

    config = json.load(open(os.path.join(args.run, "config.json")))
    split = json.load(open(os.path.join(args.run, "split.json")))
    if config.get("loss") != "infonce":
        sys.exit(f"{args.run}: loss {config.get('loss')}; the peer runs MultipleNegativesRankingLoss, nce's infonce")
    tau = float(config.get("loss_parameters", {}).get("tau", 0.05))
    rows = training_rows(args.train, set(split["train"]))
    if len(rows) != len(split["train"]):
        sys.exit(f"{args.train}: {len(rows)} of the run's {len(split['train'])} training queries found; "
                 "give the file the run was trained on")

    torch.set_num_threads(args.threads)
    random.seed(config["seed"])
    np.random.seed(config["seed"])
    torch.manual_seed(config["seed"])
    model = SentenceTransformer(config["init"], device="cpu")
    for module in model.modules():  # nce trains with config.json's dropout on hidden states and attention
        if isinstance(module, torch.nn.Dropout):
            module.p = float(config["dropout"])
    loss_model = losses.MultipleNegativesRankingLoss(model, scale=1.0 / tau)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["learning_rate"], betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=config["weight_decay"])
    steps, batch_size = config["max_steps"], config["batch_size"]
    warmup = config["warmup_steps"]
    scheduler = {"cosine": lambda: transformers.get_cosine_schedule_with_warmup(optimizer, warmup, steps),
                 "linear": lambda: transformers.get_linear_schedule_with_warmup(optimizer, warmup, steps),
                 "constant": lambda: transformers.get_constant_schedule_with_warmup(optimizer, warmup)}[config["schedule"]]()
    generator = random.Random(config["seed"])

    def features(texts, max_length):  # the override the trainer's data collator passes
        return model.preprocess(texts, max_length=max_length)

    def batches():  # epoch after epoch (the last batch of one may be short, as nce's)
        while True:
            yield from no_duplicate_batches(rows, batch_size, generator)

    model.train()
    start = time.perf_counter()
    for step, batch in zip(range(steps), batches()):
        anchors = features([anchor for anchor, _ in batch], config["max_query_length"])
        positives = features([positive for _, positive in batch], config["max_passage_length"])
        loss = loss_model([anchors, positives], None)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config["max_grad_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config["max_grad_norm"])
        optimizer.step()
        scheduler.step()
        if (step + 1) % 10 == 0 or step + 1 == steps:
            print(f"peer: step {step + 1}/{steps} loss {loss.item():.4f}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    model.save(args.output)
    print(json.dumps({"steps": steps, "seconds": seconds, "seconds_per_step": seconds / steps,
                      "threads": args.threads, "queries": len(rows), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
