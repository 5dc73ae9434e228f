#!/usr/bin/python3
"""One shuffled epoch of a small CPU model over a record file, read as a
training job reads it: a PyTorch DataLoader whose worker processes read the
records (os.pread through rustfs.torch.RecordDataset), one optimizer step
per batch in the main process. Prints one JSON line: epoch seconds, samples,
seconds waiting for data, seconds computing. Run by train_with_plan.py.

  train_loop.py --sampler random|planned --path FILE --offsets OFFS.npy
"""
import argparse
import json
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, RandomSampler

import rustfs.torch as rt

FEATURES = 1024  # bytes of each record the model sees


def to_tensor(b):
    return torch.frombuffer(bytearray(b[:FEATURES]), dtype=torch.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sampler", choices=["random", "planned"], required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--offsets", required=True, help="N x 2 uint64 .npy: (offset, length) per record")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=64, help="hidden units: sets the step time (64: about 4 ms)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    offs = np.load(args.offsets)
    ds = rt.RecordDataset(args.path, offs, transform=to_tensor)
    if args.sampler == "planned":
        sampler = rt.PlannedSampler(ds, offs, seed=args.seed, epoch=0)
    else:
        sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(args.seed))
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, num_workers=args.workers,
                        collate_fn=lambda b: torch.stack(b))
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    wait = compute = 0.0
    samples = steps = 0
    start = last = time.perf_counter()
    for batch in loader:
        got = time.perf_counter()
        wait += got - last
        x = batch.float() / 255
        y = batch[:, 0].long() % 10
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        last = time.perf_counter()
        compute += last - got
        samples += len(batch)
        steps += 1
    print(json.dumps({"epoch_s": last - start, "samples": samples, "steps": steps, "wait_s": wait,
                      "compute_s": compute}))


if __name__ == "__main__":
    main()
