"""Exercise answers for chapter 1, why speculation can be fast (computed, never typed).

``DATA`` holds the inputs the exercises state (illustrative model sizes); the notebook
shows them from here.
"""

import math

from . import register

#: Inputs of chapter 1's exercises. Model sizes are illustrative (Llama-2-like).
DATA = {
    "target_params": 70e9,
    "draft_params": 7e9,
    "bf16": 2.0,
    "int4": 0.5,
    # the bf16 target does not fit in one 80 GB H100: tensor parallel over two; and a
    # server of eight for the long-context batch of exercise 5
    "n_gpus": 2,
    "n_gpus_server": 8,
    "alpha": 0.8,
    "k": 5,
    # a 70B-class model with grouped-query attention: 80 layers, 64 query heads and
    # 8 KV heads of dim 128
    "layers": 80,
    "q_heads": 64,
    "kv_heads": 8,
    "head_dim": 128,
    "context": 32768,
    # a 7B-class draft with grouped-query attention (illustrative): 32 layers, 8 KV heads
    # of dim 128; exercise 5 counts its weights and its own cache
    "draft_layers": 32,
    "draft_kv_heads": 8,
    "draft_head_dim": 128,
}


def _ex1():
    from ..costmodel import H200_SXM, ridge_point
    return ridge_point(H200_SXM, DATA["bf16"])


def _ex2():
    from ..costmodel import H100_SXM, forward_time, tensor_parallel
    hw = tensor_parallel(H100_SXM, DATA["n_gpus"])
    t = forward_time(1, DATA["target_params"], hw, DATA["bf16"])
    return [1e3 * t, 1.0 / t]


def _ex3():
    from ..costmodel import H100_SXM, ridge_point
    return math.floor(ridge_point(H100_SXM, DATA["int4"])) - 1


def _ex4():
    from ..costmodel import H100_SXM, modelled_speedup, speed_ratio, tensor_parallel
    hw = tensor_parallel(H100_SXM, DATA["n_gpus"])
    c = speed_ratio(DATA["target_params"], DATA["draft_params"], hw, DATA["bf16"])
    s = modelled_speedup(DATA["alpha"], DATA["k"], DATA["target_params"], DATA["draft_params"],
                         hw, DATA["bf16"])
    return [c, s]


def _ex5():
    from ..costmodel import (
        H100_SXM,
        attention_flops,
        forward_time,
        kv_cache_bytes,
        ridge_point,
        tensor_parallel,
    )
    hw = tensor_parallel(H100_SXM, DATA["n_gpus"])
    kv = kv_cache_bytes(DATA["context"], DATA["layers"], DATA["kv_heads"], DATA["head_dim"])
    A = attention_flops(DATA["context"], DATA["layers"], DATA["q_heads"], DATA["head_dim"])
    n_star = ridge_point(hw, DATA["bf16"], DATA["target_params"], kv, A)
    ratio = (forward_time(1, DATA["target_params"], hw, DATA["bf16"], kv)
             / forward_time(1, DATA["target_params"], hw, DATA["bf16"]))
    return [kv / 1e9, A / 1e9, n_star, ratio]


register("ch1-ex1", _ex1, hint=("Where does the roofline's compute limit meet its memory limit? Count "
              "one token's FLOPs and bytes."))
register("ch1-ex2", _ex2, hint=("With one token per pass, which resource limits the time: arithmetic or "
              "memory?"))
register("ch1-ex3", _ex3, atol=0.5, hint=("How many tokens does one verification pass score, and up to which "
              "point does its time stay flat?"))
register("ch1-ex4", _ex4, hint=("When both passes are limited by the same resource, what sets their "
              "time ratio?"))
register("ch1-ex5", _ex5, hint=("Count the cache's bytes and the attention's FLOPs per token "
              "separately, then ask where the two roofline terms meet."))
