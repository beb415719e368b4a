#!/usr/bin/env python3
"""The same training step in PyTorch Python, for a side-by-side check of torchprobe-bench.

Only for comparison (torchprobe itself never needs Python). It times the tutorial loop --
forward, cross-entropy, backward, SGD(lr=0.001, momentum=0.9) step -- on the CPU with the same
models, batch sizes and thread count, on random data already normalised and in memory, and
prints Google-Benchmark-like JSON lines: {"name", "median_ms", "samples_ms", "threads", "torch"}.

    python3 bench/python/train_step_reference.py --threads 2 --models net resnet18 --batch-sizes 4 64 256
"""
import argparse
import json
import statistics
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import same_allocator  # noqa: E402,F401  (before torch: glibc reads it at start-up)
import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):  # the PyTorch CIFAR-10 tutorial network
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + (self.downsample(x) if self.downsample is not None else x)
        return F.relu(out)


class ResNet18(nn.Module):  # CIFAR variant: 3x3 stem, no max-pool
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, in_planes = [], 64
        for planes, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers.append(nn.Sequential(BasicBlock(in_planes, planes, stride), BasicBlock(planes, planes, 1)))
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


MODELS = {"net": Net, "resnet18": ResNet18}


def time_steps(model_name, batch, min_time, min_samples, rotating=4):
    torch.manual_seed(0)
    net = MODELS[model_name]()
    net.train()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    batches = [(torch.rand(batch, 3, 32, 32) * 2 - 1, torch.randint(0, 10, (batch,))) for _ in range(rotating)]

    def step(i):
        inputs, labels = batches[i % rotating]
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

    warm_start = time.perf_counter()
    i = 0
    while i < 1 or time.perf_counter() - warm_start < 0.2:  # same warm-up rule as torchprobe-bench
        step(i)
        i += 1
    samples = []
    start = time.perf_counter()
    while len(samples) < min_samples or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        step(i)
        samples.append((time.perf_counter() - t0) * 1e3)
        i += 1
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--models", nargs="+", default=["net", "resnet18"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[4, 64, 256])
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds of timed steps per configuration")
    parser.add_argument("--min-samples", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for model in args.models:
        for batch in args.batch_sizes:
            samples = time_steps(model, batch, args.min_time, args.min_samples)
            print(json.dumps({"name": f"python/train_step/{model}/cpu/batch:{batch}",
                              "median_ms": statistics.median(samples), "samples_ms": samples,
                              "threads": torch.get_num_threads(), "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
