"""The Chinese words of teachllm.viz: English template → Chinese template, for `language.tr`.

Each pair keeps the same {fields} with the same format specs; token texts, numbers and units are fields
or stay outside, so both editions show the same values. The terms are book/zh/glossary.md's, the
Chinese edition's one term list: 提示词 (prompt), 预填充 (prefill), 解码 (decode), KV 缓存, 采样器, 温度, 贪婪解码,
束搜索, 重复惩罚, 块表, 槽位, 迭代, token 预算, 算术强度, 屋脊点, Roofline, 反分词器 (detokenizer). Chinese text
follows the space rule: one space between a Chinese character and a Latin letter or digit, none next to full-width
punctuation. A head index reads "2 号头" (counting from 0, as the code does).
"""

ZH: dict[str, str] = {
    # ---- words used in many places (phases, controls, axes)
    "prefill": "预填充",
    "decode": "解码",
    "waiting": "等待",
    "step": "步",
    "phase": "阶段",
    "token": "token",
    "ms": "ms",
    "cache": "缓存",
    "layer": "层",
    "head": "注意力头",
    "iteration": "迭代",
    "tokens": "token 数",
    "bytes": "字节",
    "probability": "概率",
    "cumulative": "累积概率",
    "measured": "实测",
    "predicted": "预测",
    "spec sheet": "规格表",
    "model": "模型",
    "after": "处理后",
    "query": "查询",
    "key": "键",
    "prompt": "提示词",
    "prompt:": "提示词：",
    "none": "无",
    "nobody": "无",
    "finished": "已结束",
    "preempted": "被抢占",
    "request {rid}": "请求 {rid}",
    # ---- sampling settings (chapter 6's explorer; figures.describe)
    "temperature": "温度",
    "top-k": "top-k",
    "top-p": "top-p",
    "min-p": "min-p",
    "repetition": "重复惩罚",
    "presence": "存在惩罚",
    "frequency": "频率惩罚",
    "greedy (T = 0)": "贪婪解码（T = 0）",
    "preset": "预设",
    "custom": "自定义",
    "code": "代码",
    "factual QA": "事实问答",
    "chat": "对话",
    "creative": "创意写作",
    "creative, brainstorming": "创作、头脑风暴",
    "brainstorm": "头脑风暴",
    "random seed": "随机种子",
    "sample": "采样",
    "filters (T 0 = greedy; top-k 0, top-p 1, min-p 0 = off)":
        "过滤（T 为 0 即贪婪解码；top-k 为 0、top-p 为 1、min-p 为 0 即关闭）",
    "penalties (1 and 0 = off; presence, frequency: output only)":
        "惩罚（重复惩罚为 1、其余为 0 即关闭；存在惩罚和频率惩罚只看输出）",
    "press <i>sample</i> to draw a token with this random seed": "按<i>采样</i>，用这个随机种子抽取一个 token",
    "sampled <b>{token}</b> (id {id}, rank {rank} after processing)":
        "采样到 <b>{token}</b>（id {id}，处理后排名 {rank}）",
    # ---- 1. the next-token distribution
    "model (before)": "模型（处理前）",
    "after processing": "处理后",
    "cumulative (what top-p sees)": "累积概率（top-p 按它截断）",
    "sampled": "采样结果",
    "{rule} cut": "{rule} 截断",
    "{settings} · entropy {before:.2f} → {after:.2f} bits · {kept:,} of {vocab:,} tokens survive":
        "{settings} · 熵 {before:.2f} → {after:.2f} 比特 · {vocab:,} 个 token 中留下 {kept:,} 个",
    ", outside the chart": "，不在图中",
    " · sampled {token} (rank {rank}{where})": " · 采样到 {token}（排名 {rank}{where}）",
    # ---- 2. attention
    "{phase}, head {h}": "{phase}，{h} 号头",
    "{phase}, query head {h}": "{phase}，{h} 号查询头",
    "query head {h}": "{h} 号查询头",
    " ◀ selected": " ◀ 当前",
    "layer {layer} · KV head {kv} is shared by query heads {first}–{last} (GQA)<br>blue: prefill, one row per prompt "
    "token · orange: decode, one row per step · grey: masked (the future)":
        "第 {layer} 层 · {kv} 号 KV 头由 {first}–{last} 号查询头共享（GQA）<br>蓝色：预填充，每个提示词 token 一行 · "
        "橙色：解码，每步一行 · 灰色：被掩码遮住（未来的位置）",
    "layer {i}": "第 {i} 层",
    "KV head {kv} · query head {h}": "{kv} 号 KV 头 · {h} 号查询头",
    # ---- 3. KV cache growth
    "measured: cache.bytes_used": "实测：cache.bytes_used",
    "formula: 2·L·n_kv·d·tokens·batch·bytes per element":
        "公式：2 × 层数 × KV 头数 × 头维度 × token 数 × 批大小 × 每个数的字节数",
    "contiguous: allocated": "连续缓存：已分配",
    "layer: K+V stored": "每层：已存入的 K 和 V",
    "layer: reserved, empty": "每层：已预留、还空着",
    "paged: allocated": "分页缓存：已分配",
    "paged: used": "分页缓存：已使用",
    "KV cache after step {step} ({phase}): {length} of {capacity} slots, {used:.2f} MiB used of {allocated:.2f} MiB "
    "allocated":
        "第 {step} 步（{phase}）之后的 KV 缓存：{capacity} 个槽位用了 {length} 个，"
        "已分配 {allocated:.2f} MiB，已使用 {used:.2f} MiB",
    "step (0 = prefill)": "步（第 0 步是预填充）",
    "bytes per layer": "每层字节数",
    # ---- 4. step-through
    "candidates": "候选 token",
    "step {index} · {phase} · chose {token}{took} · KV cache {length} tokens":
        "第 {index} 步 · {phase} · 选中 {token}{took} · KV 缓存 {length} 个 token",
    "probability after processing": "处理后的概率",
    "next token": "下一个 token",
    "run to the end": "运行到结束",
    "restart": "重新开始",
    "(finished)": "（已结束）",
    # ---- 5. cost: timeline and roofline
    "{phase} utilisation": "{phase}的利用率",
    "{value} of peak": "峰值的 {value}",
    "prefill of {prompt} tokens, then {n} decode steps: {total:.0f} ms in all":
        "预填充 {prompt} 个 token，再解码 {n} 步：共 {total:.0f} ms",
    "time since the prompt went in (ms)": "从输入提示词起的时间（ms）",
    "% of peak FLOP/s": "占峰值 FLOP/s 的百分比",
    "roof: {device}": "屋顶：{device}",
    "{name} (measured)": "{name}（实测）",
    "{name} (roofline)": "{name}（Roofline 预测）",
    "{device} ({source}): peak {peak}, {bandwidth:.1f} GB/s, ridge {ridge:.1f} FLOP/byte":
        "{device}（{source}）：峰值 {peak}，带宽 {bandwidth:.1f} GB/s，屋脊点 {ridge:.1f} FLOP/字节",
    "arithmetic intensity (FLOP/byte)": "算术强度（FLOP/字节）",
    "FLOP/byte": "FLOP/字节",
    "ridge": "屋脊点",
    "generate and time": "生成并计时",
    "measure": "测量",
    # ---- lecture figures: BPE, penalties, beam search, the pipeline
    "pieces": "片段",
    "after {n} merge: {pieces} pieces": "{n} 次合并后：{pieces} 个片段",
    "after {n} merges: {pieces} pieces": "{n} 次合并后：{pieces} 个片段",
    " (latest merge: {merge})": "（最近一次合并：{merge}）",
    " (characters)": "（单个字符）",
    "characters": "字符",
    "merges": "合并次数",
    "logits": "原始 logits",
    "repetition {value:g}": "重复惩罚 {value:g}",
    "presence {presence:g}, frequency {frequency:g}": "存在惩罚 {presence:g}，频率惩罚 {frequency:g}",
    "no-repeat {n}-gram": "禁止重复 {n}-gram",
    "each penalty in turn (a missing bar: banned, −∞)": "依次施加每种惩罚（没有柱子的 token 被禁止，logit 为 −∞）",
    "logit": "logit 值",
    "dropped later": "后来被淘汰",
    "best finished sequence": "完成的假设（得分最高）",
    "beams": "束",
    "beam score": "得分",
    "beam search: every beam kept at each step": "束搜索：每一步保留下来的所有束",
    "generated tokens": "已生成的 token 数",
    "rank at that length (best on top)": "同一长度下的排名（最好的在最上面）",
    "tokenizer": "分词器",
    "KV cache": "KV 缓存",
    "decode loop": "解码循环",
    "sampler": "采样器",
    "detokenizer": "反分词器",
    "{n} characters → ids": "{n} 个字符 → id",
    "ids [{n}]": "{n} 个 id",
    "ids {first}, {second}": "id 为 {first}、{second}",
    "every prompt token at once; fills the KV cache": "一次处理全部提示词 token，写入 KV 缓存",
    "K and V of every layer": "每一层的 K 和 V",
    "one token per step, reads the cache": "每步一个 token，读取缓存",
    "logits → one id (greedy)": "logits → 一个 id（贪婪解码）",
    "logits → one id (sampled)": "logits → 一个 id（采样）",
    "ids → text": "id → 文本",
    "one prompt through the pipeline": "一个提示词走过整条流水线",
    # ---- serving: the iteration timeline
    "request {rid}, iteration {i}: ": "请求 {rid}，第 {i} 次迭代：",
    "then a token was sampled": "随后采样出一个 token",
    "a chunk: no token sampled yet": "提示词还没有预填充完，暂不采样 token",
    "prefill of tokens {first}–{last} ({n} tokens), {then}": "预填充第 {first}–{last} 个 token（{n} 个），{then}",
    "decode (one token)": "解码（一个 token）",
    "iteration {i}: {tokens} tokens computed in {calls} forward call":
        "第 {i} 次迭代：{calls} 次前向传播计算了 {tokens} 个 token",
    "iteration {i}: {tokens} tokens computed in {calls} forward calls":
        "第 {i} 次迭代：{calls} 次前向传播计算了 {tokens} 个 token",
    "  decode ({n} tokens, one each): requests {ids}": "  解码（{n} 个 token，每个请求一个）：请求 {ids}",
    "  prefill: request {rid}, tokens {first}–{last} ({n} tokens)":
        "  预填充：请求 {rid}，第 {first}–{last} 个 token（{n} 个）",
    " — a chunk, no token sampled yet": " — 提示词还没有预填充完，暂不采样 token",
    "  sampled a token: {sampled} · finished: {finished}": "  采样出 token 的请求：{sampled} · 已结束：{finished}",
    " · preempted: {ids}": " · 被抢占：{ids}",
    "  after it: {running} running, {waiting} waiting, {blocks} KV blocks in use":
        "  迭代之后：{running} 个运行中，{waiting} 个等待，{blocks} 个 KV 块在用",
    "finished in iteration {i}": "在第 {i} 次迭代中完成",
    "decode tokens": "解码 token",
    "prefill tokens": "预填充 token",
    "iteration {i}: {n} decode tokens": "第 {i} 次迭代：{n} 个解码 token",
    "iteration {i}: {n} prefill tokens": "第 {i} 次迭代：{n} 个预填充 token",
    "token budget ({budget})": "token 预算（{budget}）",
    "no token budget": "无 token 预算",
    "iteration {upto} of {first}–{last}": "第 {first}–{last} 次迭代中的第 {upto} 次",
    "{n} iterations": "{n} 次迭代",
    "static": "静态",
    "continuous": "连续",
    "{policy} batching: {n} requests, at most {most} at once · {iterations}, {calls} forward calls in all":
        "{policy}批处理：{n} 个请求，同时最多 {most} 个 · {iterations}，共 {calls} 次前向传播",
    "previous": "上一次",
    "next": "下一次",
    "last": "最后一次",
    # ---- serving: block tables and slots
    "request {rid}, logical block {i} → physical block {block}: {filled}/{bs} slots, tokens {first}–{last}, "
    "ref count {refs}":
        "请求 {rid}，逻辑块 {i} → 物理块 {block}：{filled}/{bs} 个槽位，第 {first}–{last} 个 token，引用计数 {refs}",
    "block {b}: {filled}/{bs} slots, ref count {refs} (requests {who})":
        "块 {b}：{filled}/{bs} 个槽位，引用计数 {refs}（请求 {who}）",
    "one owner": "单一持有者",
    "shared": "共享",
    "free": "空闲",
    "table: {name}": "块表：{name}",
    "pool: {name}": "块池：{name}",
    "block tables": "块表",
    " · {used} of {total} blocks in use ({shared} shared), {free} free · {slots} of {allocated} allocated slots "
    "hold a token":
        " · {total} 个块中 {used} 个在用（{shared} 个共享），{free} 个空闲 · 已分配的 {allocated} 个槽位中 "
        "{slots} 个存有 token",
    "blue: one owner, green: shared (reference count > 1), grey: free · the darker, the fuller":
        "蓝色：单一持有者，绿色：共享（引用计数 > 1），灰色：空闲 · 颜色越深，块越满",
    "logical block (tokens i·bs … i·bs + bs − 1)": "逻辑块（第 i·bs … i·bs + bs − 1 个 token）",
    "the pool: {n} blocks × {bs} slots": "块池：{n} 个块 × {bs} 个槽位",
    "after iteration {i}": "第 {i} 次迭代之后",
    "contiguous: reserved (prompt + max_tokens each)": "连续缓存：预留（每个请求提示词长度 + max_tokens）",
    "paged: allocated (blocks × block size)": "分页缓存：已分配（块数 × 块大小）",
    "used: tokens in the cache": "已使用：缓存中的 token",
    "KV slots per iteration · wasted on average: paged {paged:.1%}, contiguous reservation {contiguous:.1%}":
        "每次迭代的 KV 槽位 · 平均浪费：分页 {paged:.1%}，连续预留 {contiguous:.1%}",
    "KV slots": "KV 槽位",
    # ---- serving: CacheBlend
    "HKVD: largest K/V deviation": "HKVD：K/V 偏差最大的 token",
    "random tokens": "随机 token",
    "full prefill": "完整预填充",
    "CacheBlend: quality of the question's next-token predictions against the prefill compute spent":
        "CacheBlend：问题部分下一个 token 预测的质量与所花预填充计算量的关系",
    "share of a full prefill's compute (token-layers)": "占完整预填充计算量的比例（token·层）",
    "KL(full ‖ blended)": "KL(完整预填充 ‖ CacheBlend)",
    "perplexity of the question": "问题部分的困惑度",
    "perplexity": "困惑度",
    "compute share": "计算量占比",
    # ---- the notebooks' own figures (notebooks/src)
    "Entropy of the next-token distribution against temperature": "下一个 token 分布的熵随温度的变化",
    "temperature T": "温度 T",
    "entropy (bits)": "熵（比特）",
    "uniform: log₂ V": "均匀分布：log₂ V",
    "QA, summaries": "问答、摘要",
    "(measured)": "（实测）",
    "(Llama-7B, predicted)": "（Llama-7B，预测）",
    "request {i} (long)": "请求 {i}（长）",
    "request {i} (short)": "请求 {i}（短）",
    "without chunking: one iteration computes {most} tokens": "不分块：一次迭代计算 {most} 个 token",
    "chunked prefill, budget 32: the long prompt is prefilled in {n} chunks":
        "分块预填充，token 预算 32：长提示词分 {n} 块预填充完",
    "{n} iterations, {calls} forward calls; the first two:": "共 {n} 次迭代、{calls} 次前向传播；下面是前两次：",
    # ---- the chapters' quizzes (viz.Quiz)
    "Check": "检查答案",
    "✓ Right.": "✓ 正确。",
    "✗ Not right. The answer: {answer}": "✗ 不对。正确答案：{answer}",
    "a number": "填一个数",
    "Enter a number first.": "请先填一个数。",
    "Choose an answer first.": "请先选一个答案。",
    "user message (in the chat template):": "用户消息（放进对话模板）：",
    "The book shows what was measured when its notebooks were built; run this chapter's notebook to measure your own "
    "machine.": "书里显示的是构建笔记本时测得的结果；要测你自己的机器，请运行本章的笔记本。",
    # ---- the chapters' printed lines and table headers (notebooks/src; tests/test_zh_outputs.py)
    "{n} tokens, finished because: {reason}": "{n} 个 token，结束原因：{reason}",
    "prompt tokens: {n_in}, output tokens: {n_out}": "提示词 token 数：{n_in}，输出 token 数：{n_out}",
    "TTFT                  {ms:7.1f} ms   (prefill of {n_in} tokens + choosing one)":
        "TTFT                  {ms:7.1f} ms   （预填充 {n_in} 个 token，再选出第一个）",
    "time per output token {ms:7.1f} ms   (one decode step)": "每 token 输出延迟     {ms:7.1f} ms   （一个解码步）",
    "end-to-end latency    {ms:7.1f} ms   = TTFT + {steps} × TPOT":
        "端到端延迟            {ms:7.1f} ms   = TTFT + {steps} × TPOT",
    "tokens/s              {rate:7.1f}   = {n_out} output tokens ÷ end-to-end latency":
        "tokens/s              {rate:7.1f}   = {n_out} 个输出 token ÷ 端到端延迟",
    "decode rate           {rate:7.1f}   = 1 ÷ TPOT, tokens per second after the first":
        "解码速率              {rate:7.1f}   = 1 ÷ TPOT，第一个 token 之后每秒生成的 token 数",
    "Does encode put it first? {answer}": "encode 会把它放在最前面吗？{answer}",
    "{n} ids; the special ones are marked with *": "{n} 个 id；特殊 token 的 id 标有 *",
    "decoded without special tokens: {text!r}": "去掉特殊 token 后反分词的结果：{text!r}",
    "position of the new token: {positions} (RoPE rotates by this)":
        "新 token 的位置：{positions}（RoPE 按这个位置旋转）",
    "every best beam's score = the sum of its tokens' log-probabilities":
        "每一步最好的束，得分 = 其各 token 对数概率之和",
    "{n} nodes; the best path: {path!r}": "{n} 个节点；最好的路径：{path!r}",
    "stop string: {stop!r}, made of the end of {a!r} and all of {b!r}":
        "停止字符串：{stop!r}，由 {a!r} 的末尾和整个 {b!r} 拼成",
    "residual stream entering the layer  [B, S, h]": "进入这一层的残差流                   [B, S, h]",
    "queries of each token, after RoPE     [B, n_h, S, d]": "每个 token 的查询，已施加 RoPE       [B, n_h, S, d]",
    "keys, after RoPE (what the cache keeps) [B, n_kv, S, d]": "键，已施加 RoPE（缓存保存的就是它）  [B, n_kv, S, d]",
    "values (what the cache keeps)         [B, n_kv, S, d]": "值（缓存也保存它）                   [B, n_kv, S, d]",
    "q·kᵀ/√d, −inf where the mask forbids  [B, n_h, S, S]": "q·kᵀ/√d，掩码禁止处为 −inf           [B, n_h, S, S]",
    "softmax of the scores: the pattern   [B, n_h, S, S]": "分数的 softmax：注意力模式           [B, n_h, S, S]",
    "each head's output, probs · v        [B, n_h, S, d]": "每个头的输出，probs · v              [B, n_h, S, d]",
    "attention output after o_proj       [B, S, h]": "经过 o_proj 的注意力输出             [B, S, h]",
    "SwiGLU MLP output                    [B, S, h]": "SwiGLU MLP 的输出                    [B, S, h]",
    "same vector after layer 0: {same}": "经过第 0 层后向量相同：{same}",
    "mean attention on the previous token: {mean:.3f}": "对前一个 token 的平均注意力：{mean:.3f}",
    "scores and probabilities by hand = the trace's": "手算的分数和概率 = 追踪记录里的",
    "last row of forward = prefill's logits (within {tol})":
        "forward 的最后一行 = prefill 返回的 logits（误差在 {tol} 以内）",
    "pos  token      model predicts next  actual next": "位置 token      模型预测的下一个     实际的下一个",
    "(to generate)": "（尚待生成）",
    "one position through the LM head: 2·h·V = {flops:,} FLOPs": "一个位置经过 LM head：2·h·V = {flops:,} FLOPs",
    "resid_in + attn_out                  [B, S, h]": "resid_in + attn_out（第一次残差相加）[B, S, h]",
    "resid_mid + mlp_out                  [B, S, h]": "resid_mid + mlp_out（第二次残差相加）[B, S, h]",
    "layer {layer}: capture   shape with 12 → 13 tokens           old rows the same?":
        "第 {layer} 层：张量      12 → 13 个 token 时的形状           旧行相同吗？",
    "r = {r}: first choice {token!r} (id {id}, p = {p:.3f}); every Chinese piece together: {share:.3f}":
        "r = {r}：首选 {token!r}（id {id}，p = {p:.3f}）；所有中文片段合计：{share:.3f}",
    "this timing was disturbed (the cached step came out slower): run the cell again":
        "这次计时受到了干扰（用缓存的一步反而更慢）：请重新运行本单元格",
    "on this machine the time ratio is nearer the bytes ratio": "在这台机器上，时间比更接近字节比",
    "on this machine the time ratio is nearer the FLOP ratio": "在这台机器上，时间比更接近 FLOP 比",
    "new column (key 12) in the old rows: scores all -inf: {inf} | probs all 0: {zero}":
        "旧行中新增的列（键 12）：分数全为 -inf：{inf} | 概率全为 0：{zero}",
    "= [B, n_kv, length, d]: the filled slots of layer 1": "= [B, n_kv, length, d]：第 1 层已填充的槽位",
    "softmax of the four alone: {probs}": "只对这四个做 softmax：{probs}",
    "the tokens behind the '…' then hold {share:.0%} of the probability":
        "于是 '…' 所代表的那些 token 占了 {share:.0%} 的概率",
    "     T  entropy  most likely tokens": "     T       熵  最可能的 token",
    "k = 3 with a tie at the boundary keeps {n} tokens": "k = 3，边界上有并列时保留 {n} 个 token",
    "top-p {p}: sure prompt keeps {n_sure:>4} tokens, open prompt keeps {n_open:>5}":
        "top-p {p}：“有把握”提示词保留 {n_sure:>4} 个 token，“开放”提示词保留 {n_open:>5} 个",
    "batch  ms per step  decode rate  × batch 1": "批大小     每步 ms     解码速率 × 批大小 1",
    "both policies give every request the same tokens": "两种策略给每个请求生成的 token 都相同",
    "{n} requests part between the policies, each at a near-tie": "有 {n} 个请求在两种策略下分开，每处都是近乎并列",
    "            iterations forward calls  short: TTFT short: latency  long: TTFT long: latency":
        "              迭代次数  前向传播次数  短请求 TTFT     短请求延迟 长请求 TTFT    长请求延迟",
    "                     iterations  most tokens in one iteration  long prompt: TTFT (iterations)":
        "                       迭代次数       单次迭代最多的 token 数      长提示词：TTFT（迭代次数）",
    " p token        logical physical offset slot": " p token         逻辑块   物理块   偏移 槽位",
    "every layer: the key and value of position p are at slot(p), equal to the contiguous cache's":
        "每一层中，位置 p 的键和值都在 slot(p) 处，与连续缓存中的相同",
    "request 2's blocks after iteration: {changes}": "请求 2 在各次迭代之后的块数（迭代 → 块数）：{changes}",
    "request 0 finished in iteration {finish}; the blocks only it held went back to the pool: {own}":
        "请求 0 在第 {finish} 次迭代结束；只由它持有的块回到了池中：{own}",
    "  block {block:>2}: next held by request {rid} from iteration {i}":
        "  块 {block:>2}：从第 {i} 次迭代起由请求 {rid} 持有",
    "  block {block:>2}: not needed again": "  块 {block:>2}：之后不再被用到",
    "request 3 (joined in iteration {joined}): table {table}, {n} prompt tokens found in the cache":
        "请求 3（在第 {joined} 次迭代加入）：块表 {table}，在缓存中找到 {n} 个提示词 token",
    "iteration running  used  paged contiguous": "     迭代  运行中  已用   分页       连续",
    "mean over {n} iterations: paged wastes {paged:.1%} of what it allocates, contiguous reservations {contiguous:.1%}":
        "{n} 次迭代的平均：分页缓存浪费了所分配槽位的 {paged:.1%}，连续缓存的预留浪费了 {contiguous:.1%}",
    "prefix-cache hit rate: {hit} of {queried} prompt tokens looked up = {rate:.1%}":
        "前缀缓存命中率：查找的 {queried} 个提示词 token 中命中 {hit} 个 = {rate:.1%}",
    "{n} of {total} tokens recomputed in layers 2–29:": "{total} 个 token 中有 {n} 个在第 2–29 层重算：",
    "draft                  accepted/proposed  tokens per target call  = greedy output":
        "草稿                       接受数/提议数 每次目标调用的 token 数       = 贪婪输出",
    "max |logit difference| {diff:.2f} (logits are of size ≈ 20), mean KL {kl:.4f}, same top-1 token in "
    "{agree:.0%} of the steps":
        "logit 的最大差 {diff:.2f}（logits 本身的大小约为 20），平均 KL {kl:.4f}，"
        "{agree:.0%} 的步骤选出相同的 top-1 token",
    "free-running int8 greedy decode: the same tokens as {dtype} for the first {same} of {n} steps":
        "让 int8 缓存独自做贪婪解码：{n} 步中，前 {same} 步的 token 与 {dtype} 相同",
    "token          logit   after    loss": "token          logit  处理后    减少",
    "step  phase    token             p  cache length": "  步  阶段     token             p      缓存长度",
    "step  phase   token           p  cache length": "  步  阶段    token           p      缓存长度",
    # chapters 2 to 7: the lines a chapter prints itself
    "{words} words, {chars} characters in the alphabet, {merges} merges learned":
        "{words} 个词，字母表中有 {chars} 个字符，学到 {merges} 条合并规则",
    "layer 18, heads 7–8: mean attention on the first token {mean:.3f}":
        "第 18 层，7–8 号头：对第一个 token 的平均注意力为 {mean:.3f}",
    "all {L} layers: every value of the 12 old tokens is unchanged by the 13th":
        "全部 {L} 层：12 个旧 token 的每一个值都没有因第 13 个 token 而改变",
    "new rows of the attention pattern and of the head's output from old K, V + the new token's q, k, v "
    "= the 13-token run's":
        "由旧的 K、V 加上新 token 的 q、k、v 算出的注意力模式新一行和这个头输出的新一行 "
        "= 13 个 token 一起运行时的相应各行",
    "slot 12 now holds the new token's K and V; all 13 slots = the 13-token run's K and V":
        "12 号槽位现在存着新 token 的 K 和 V；全部 13 个槽位 = 13 个 token 一起运行时的 K 和 V",
    "step  token        same argmax  |cached - uncached| < {bound}":
        "  步  token        argmax 相同    |有缓存 - 无缓存| < {bound}",
    "prompt {prompt:>4}, {n} new tokens: without a cache {without:6.2f} TFLOP, with it {cached:6.3f} "
    "TFLOP ({ratio:4.1f}× less)":
        "提示词 {prompt:>4} 个 token，生成 {n} 个新 token：不带缓存 {without:6.2f} TFLOP，用缓存 {cached:6.3f} "
        "TFLOP（不带缓存的计算量是用缓存的 {ratio:4.1f} 倍）",
    "without a cache": "不带缓存",
    "with the cache": "用缓存",
    "{name} {flops:6.3f} GFLOP, {mb:5.1f} MB moved": "{name} {flops:6.3f} GFLOP，搬运 {mb:5.1f} MB",
    "ratio: {flops:.1f}× the FLOPs, {bytes:.2f}× the bytes": "比值：FLOP 为 {flops:.1f} 倍，字节为 {bytes:.2f} 倍",
    "of which the weights: {mb:.1f} MB in both": "其中权重：两种方式都是 {mb:.1f} MB",
    "without a cache {redo:.0f} ms, with it {step:.0f} ms: {time:.1f}× the time for {flops:.1f}× the FLOPs":
        "不带缓存 {redo:.0f} ms，用缓存 {step:.0f} ms：时间之比为 {time:.1f}，FLOP 之比为 {flops:.1f}",
    "{rows} rows (12 prefill + 6 decode) = the uncached forward's attention, in all {L} layers":
        "{rows} 行（12 行预填充 + 6 行解码）= 不带缓存的前向传播算出的注意力，全部 {L} 层都相同",
    "logits: {shape} = one score per vocabulary entry": "logits：{shape} = 词表中每个条目一个分数",
    "with Σ exp(z) = {total} for the whole vocabulary: {probs}": "若整个词表的 Σ exp(z) = {total}，则：{probs}",
    "preset      survive  bits  text (random seed 0, 16 tokens)":
        "预设         保留数  比特  文本（随机种子 0，16 个 token）",
    "p({word}) each time it was chosen: {ps}": "p({word}) 每次被选中时：{ps}",
    # chapters 11 to 13: the lines a chapter prints itself
    "batch   GFLOP  MB moved  FLOP/byte  MB of weights per token":
        "批大小  GFLOP   搬运 MB  FLOP/字节 每个 token 分摊的权重 MB",
    "{policy}: {n} iterations; each request runs from iteration to iteration: {spans}":
        "{policy}{n} 次迭代；各请求从第几次迭代运行到第几次：{spans}",
    "pool of {pool} slots; holes after request 2 finishes: {holes} = {free} free slots":
        "池中共 {pool} 个槽位；请求 2 结束后的空洞：{holes} = {free} 个空闲槽位",
    "contiguous: a {need}-slot reservation fits in a hole: {fits}":
        "连续缓存：{need} 个槽位的预留能放进某个空洞：{fits}",
    "paged, 16-slot blocks: {free} free blocks, at most {needed} needed: fits: {fits}":
        "分页缓存，每块 16 个槽位：空闲 {free} 块，最多需要 {needed} 块：放得下：{fits}",
    "prompt lengths {lengths}; the first {shared} tokens are the same in all of them":
        "提示词长度 {lengths}；它们的前 {shared} 个 token 全都相同",
    "request {rid}: {prompt} prompt + {output:>2} output tokens ({reason}), iterations {first}–{last}, "
    "{cached} prompt tokens found in the cache":
        "请求 {rid}：{prompt} 个提示词 token + {output:>2} 个输出 token（{reason}），第 {first}–{last} 次迭代，"
        "在缓存中找到 {cached} 个提示词 token",
    "prompts of {lengths} tokens, prefill + 3 decode steps each; largest |logit| {largest:.1f}":
        "提示词长度为 {lengths} 个 token，各做一次预填充和 3 步解码；最大的 |logit| 为 {largest:.1f}",
    "block size {size:>2}: every logit within {bound} of the contiguous cache's: {within}, prefix "
    "tokens read from the cache: {cached}":
        "块大小 {size:>2}：每个 logit 与连续缓存的相差都在 {bound} 以内：{within}，从缓存读取的前缀 token：{cached}",
    # chapter 13: the lines it prints itself
    "prompts of {lengths} tokens; the first {common} are the same (template + system prompt)":
        "提示词长度为 {lengths} 个 token；前 {common} 个 token 全都相同（对话模板 + 系统提示词）",
    "block 1 named again from the same tokens, after the same block 0: {same}":
        "块 1 跟在同一个块 0 之后、由同样的 token 再命名一次，名字相同：{same}",
    "the same 16 tokens at the start of a sequence get another name:   {other}":
        "同样的 16 个 token 放在序列开头，得到另一个名字：{other}",
    "request {rid}: {prompt} prompt tokens, {cached:>2} found in the cache, {computed} computed":
        "请求 {rid}：{prompt} 个提示词 token，在缓存中找到 {cached:>2} 个，计算了 {computed} 个",
    "block 0 of the first request is in the cache under its name: {found}":
        "第一个请求的块 0 以它的名字留在缓存中：{found}",
    "layer {layer:>2}: max |key| error  as stored {stored:6.3f}, after the shift {shifted:6.3f}":
        "第 {layer:>2} 层：键的最大误差  原样存储 {stored:6.3f}，平移之后 {shifted:6.3f}",
    "{n} documents of {lengths} tokens, then the question ({q} tokens): {question}":
        "{n} 篇文档，各 {lengths} 个 token，然后是问题（{q} 个 token）：{question}",
    "select        r  compute      KL  top-1 perplexity": "选择方式      r   计算量      KL  top-1     困惑度",
    "(r = 0: full reuse, no compute; r = 1: a full prefill; perplexity after a full prefill {ppl:.2f})":
        "（r = 0：完全复用，不做计算；r = 1：完整预填充；完整预填充之后的困惑度为 {ppl:.2f}）",
    "[doc {n}]": "[文档 {n}]",
    "first 24 layers": "前 24 层",
    "first 29 layers": "前 29 层",
    "layers 0–9 and 20–29": "第 0–9 层和第 20–29 层",
    "draft                  rounds judged α  formula  measured  1 + γ·accepted/proposed":
        "草稿                     轮数   评判 α     公式      实测      1 + γ·接受数/提议数",
    "the accepted/proposed rate of 'first 29 layers' in the formula: {n:.2f} tokens per call":
        "把“前 29 层”的接受数/提议数代入公式：每次调用 {n:.2f} 个 token",
    "a good draft, judged α = 0.8 with γ = 4: {n:.2f} tokens per call":
        "一个好草稿，被评判的 α = 0.8、γ = 4：每次调用 {n:.2f} 个 token",
    "{name} {s:5.2f} s against greedy {greedy:5.2f} s: speed-up {x:.2f}×":
        "{name} {s:5.2f} s，贪婪解码 {greedy:5.2f} s：加速比 {x:.2f}×",
    "KV head {head}: first values {values} → int8 {ints}, scale {scale:.4f}, max error {error:.4f}":
        "{head} 号 KV 头：前几个值 {values} → int8 {ints}，缩放因子 {scale:.4f}，最大误差 {error:.4f}",
    "bytes per token: {int8:,} instead of {full:,} ({share:.1%}: d int8 values + one float32 scale per head, "
    "against {size}·d bytes)":
        "每个 token 的字节数：{int8:,}，而不是 {full:,}（{share:.1%}：每个头 d 个 int8 值加一个 float32 缩放因子，"
        "对比 {size}·d 字节）",
    "1024 tokens: {int8:.1f} MiB in int8 against {full:.1f} MiB in {dtype}":
        "1024 个 token：int8 占 {int8:.1f} MiB，{dtype} 占 {full:.1f} MiB",
    # chapter 10: the lines it prints itself, and the tables of teachllm.cost, roofline and fastpath.kernels
    "h = {h}, L = {L}, n_h = {n_h}, n_kv = {n_kv}, d = {d}, f = {f}, V = {V:,}, {params:.1f}M parameters, {dtype}":
        "h = {h}，L = {L}，n_h = {n_h}，n_kv = {n_kv}，d = {d}，f = {f}，V = {V:,}，{params:.1f}M 个参数，{dtype}",
    "Q, K, V projections": "Q、K、V 投影",
    "Q·Kᵀ": "Q·Kᵀ",
    "scores·V": "scores·V",
    "output projection": "输出投影",
    "MLP, h → 4h → h": "MLP，从 h 到 4h 再到 h",
    "one layer": "一层",
    "{L} layers: {gflop:.3f} GFLOP": "{L} 层：{gflop:.3f} GFLOP",
    "linear ÷ attention part: 24bsh² / 4bs²h = 24h / 4s = {ratio:.0f}":
        "线性部分 ÷ 注意力部分：24bsh² / 4bs²h = 24h / 4s = {ratio:.0f}",
    "recompute all {n} tokens: {without:.3f} GFLOP;  one cached decode step: {cached:.4f} GFLOP;  {ratio:.0f}× less":
        "重算全部 {n} 个 token：{without:.3f} GFLOP；用缓存的一个解码步："
        "{cached:.4f} GFLOP；前者是后者的 {ratio:.0f} 倍",
    "TFLOP, 1,000-token prefill  estimate  lecture   exact": "TFLOP，预填充 1,000 个 token    估算   层公式    精确",
    "Q·Kᵀ and scores·V": "Q·Kᵀ 和 scores·V",
    "Q, K, V, O projections": "Q、K、V、O 投影",
    "MLP": "MLP",
    "LM head": "LM head",
    "total": "合计",
    "rule of thumb 2 · N · tokens (N = {n:.2f}B parameters): {tflop:.3f} TFLOP":
        "经验法则 2 · N · tokens（N = {n:.2f}B 个参数）：{tflop:.3f} TFLOP",
    "exact decode step at 1,000 tokens: {exact:.2f} GFLOP (estimate: {estimate:.2f})":
        "1,000 个 token 处的一个解码步，精确计数：{exact:.2f} GFLOP（估算：{estimate:.2f}）",
    " prompt | SmolLM2:      exact÷rule  +attn  −emb/head | Llama-7B: exact÷rule  +attn  −emb/head":
        " 提示词 | SmolLM2：精确÷法则  +注意力  −嵌入/LM head | Llama-7B：精确÷法则  +注意力  −嵌入/LM head",
    "width of K and V: n_kv · d = {n_kv} · {d} = {width}": "K 和 V 的宽度：n_kv · d = {n_kv} · {d} = {width}",
    "layer 0, operation by operation:": "第 0 层，逐个运算：",
    "fast path counted: {counted:,} = teachllm.cost {total:,}": "快速路径计得：{counted:,} = teachllm.cost {total:,}",
    "decode step: FlopCounterMode {counted:,} = teachllm.cost {total:,}":
        "解码步：FlopCounterMode {counted:,} = teachllm.cost {total:,}",
    "{n:>5} tokens: {gflop:>9.1f} GFLOP, attention (Q·Kᵀ and scores·V) {share:6.1%}":
        "{n:>5} 个 token：{gflop:>9.1f} GFLOP，注意力（Q·Kᵀ 和 scores·V）占 {share:6.1%}",
    "call                     GFLOP weights MB KV read MB KV write MB FLOP/byte":
        "调用                     GFLOP    权重 MB KV 读取 MB  KV 写入 MB FLOP/字节",
    "prefill, FLOP/byte per prompt token at s = 300: {x:.2f}":
        "预填充，s = 300 时每个提示词 token 贡献的 FLOP/字节：{x:.2f}",
    "{n} of the model's matmul shapes (m, k, n), and one square one: {shapes} …":
        "模型的 {n} 种矩阵乘法形状 (m, k, n)，外加一个方阵：{shapes} …",
    "{device} for comparison": "作为对比：{device}",
    "highest share of the peak reached by a phase: {share:.0%}": "各阶段达到峰值的最高比例：{share:.0%}",
    "                             FLOP/byte    bound  time at the roof":
        "                             FLOP/字节     瓶颈    按屋顶算的耗时",
    "memory": "内存",
    "compute": "算力",
    "memory bandwidth": "内存带宽",
    "H100 ridge: {ridge:.0f} FLOP/byte (bfloat16)": "H100 的屋脊点：{ridge:.0f} FLOP/字节（bfloat16）",
    "SmolLM2-135M prefill of 300 tokens, {dtype}: {x:.2f} FLOP/byte per prompt token":
        "SmolLM2-135M 预填充 300 个 token，{dtype}：每个提示词 token {x:.2f} FLOP/字节",
    "{name:<14} prefill is compute-bound on an H100 from {n} tokens "
    "on ({before_x:.1f} FLOP/byte at {before}, {x:.1f} at {n})":
        "{name:<14} 预填充在 H100 上从 {n} 个 token 起是计算密集型的（{before} "
        "个 token 时 {before_x:.1f} FLOP/字节，{n} 个时 {x:.1f}）",
    "this CPU's ridge: {ridge:.1f} FLOP/byte ({dtype})": "这台 CPU 的屋脊点：{ridge:.1f} FLOP/字节（{dtype}）",
    "{name:<14} prefill is compute-bound here from {n} tokens on":
        "{name:<14} 预填充在这里从 {n} 个 token 起是计算密集型的",
    "weights {mb:.0f} MB": "权重 {mb:.0f} MB",
    "tokens per pass": "每次前向传播的 token 数",
    "attention, per head": "每个头的注意力",
    "attention FLOPs (O(N²d), O(Nd))": "注意力的 FLOPs（O(N²d)、O(Nd)）",
    "all FLOPs": "全部 FLOPs",
    "memory read": "读取的内存",
    "FLOP per byte, float32": "每字节 FLOP，float32",
    "FLOP per byte, bfloat16": "每字节 FLOP，bfloat16",
    "bottleneck on an H100 (ridge {ridge:.0f})": "H100 上的瓶颈（屋脊点 {ridge:.0f}）",
    "compute-bound on an H100 from": "在 H100 上成为计算密集型的起点",
    "{n} prompt tokens": "{n} 个提示词 token",
    "never at batch 1": "批大小为 1 时永远不会",
    "time": "耗时",
    "time per token": "每个 token 的耗时",
    "achieved GFLOP/s": "达到的 GFLOP/s",
    "utilisation: % of peak FLOP/s": "利用率：占峰值 FLOP/s 的比例",
    "bytes/s: % of measured bandwidth": "字节/秒：占实测带宽的比例",
    "bottleneck of {name} here: {bound} ({intensity:.1f} FLOP/byte, ridge {ridge:.1f})":
        "{name}在这里的瓶颈：{bound}（{intensity:.1f} FLOP/字节，屋脊点 {ridge:.1f}）",
    "LLM Generation Process": "《LLM 生成过程》",
    "interview answer, table": "面试题解答（表格）",
    "interview answer, text": "面试题解答（正文）",
    "this run {share:6.1%}: {verdict}": "这次运行 {share:6.1%}：{verdict}",
    "inside": "在范围内",
    "below": "低于范围",
    "above": "高于范围",
    "the roof caps decode's share here at intensity ÷ ridge = {intensity:.2f} ÷ {ridge:.1f} = {cap:.1%}":
        "在这台机器上，屋顶把解码的比例限制在：算术强度 ÷ 屋脊点 = {intensity:.2f} ÷ {ridge:.1f} = {cap:.1%}",
    " {n:>2} step(s), {ms:7.1f} ms in all, mean utilisation {u:6.1%} of peak FLOP/s":
        " {n:>2} 步，共 {ms:7.1f} ms，平均利用率为峰值 FLOP/s 的 {u:6.1%}",
    "decode step at T = {T} keys": "T = {T} 个键时的一个解码步",
    "batch    GFLOP  weights MB  KV read MB  FLOP/byte": "批大小   GFLOP     权重 MB  KV 读取 MB  FLOP/字节",
    "batch  weights GB  KV read GB  FLOP/byte  decode tokens/s  × batch 1":
        "批大小    权重 GB  KV 读取 GB  FLOP/字节     解码 token/s × 批大小 1",
    "batch decode tokens/s  × batch 1  roofline  × batch 1": "批大小   解码 token/s × 批大小 1  Roofline × 批大小 1",
    "TTFT ({n}-token prompt): measured {measured:7.1f} ms, roofline bound {roof:6.1f} ms (bound: {bound})":
        "TTFT（{n} 个 token 的提示词）：实测 {measured:7.1f} ms，Roofline 下界 {roof:6.1f} ms（瓶颈：{bound}）",
    "TPOT:                     measured {measured:7.1f} ms, roofline bound {roof:6.1f} ms (bound: {bound})":
        "TPOT：                         实测 {measured:7.1f} ms，Roofline 下界 {roof:6.1f} ms（瓶颈：{bound}）",
    "decode rate (1 ÷ TPOT): {rate:.1f} tokens per second; the roof allows {roof:.1f}":
        "解码速率（1 ÷ TPOT）：每秒 {rate:.1f} 个 token；屋顶允许每秒 {roof:.1f} 个",
    "tokens/s (output tokens ÷ end-to-end time): {n} ÷ {s:.3f} s = {rate:.1f}":
        "tokens/s（输出 token 数 ÷ 端到端时间）：{n} ÷ {s:.3f} s = {rate:.1f}",
    "Llama-7B on an H100: TTFT ≥ {ttft:.1f} ms for a 1,000-token prompt, "
    "TPOT ≥ {tpot:.2f} ms, decode rate ≤ {rate:.0f} tokens per second":
        "Llama-7B 在 H100 上：1,000 个 token 的提示词 TTFT ≥ {ttft:.1f} "
        "ms，TPOT ≥ {tpot:.2f} ms，解码速率 ≤ 每秒 {rate:.0f} 个 token",
    "4-bit model on {q}; float32 reference on {ref}": "4 位模型在 {q} 上；float32 参照模型在 {ref} 上",
    " (this chapter's model runs on {device} in {dtype})": "（本章的模型在 {device} 上以 {dtype} 运行）",
    "{cls}: {i} → {o}, {mib:.2f} MiB as stored (float32: {mib32:.2f} MiB), kernel {kernel}":
        "{cls}：{i} → {o}，文件中的块占 {mib:.2f} MiB（float32 要 {mib32:.2f} MiB），内核 {kernel}",
    "row 0, block 0: q = {q}": "第 0 行，第 0 块：q = {q}",
    "                d = {d:.6g}, m = {m:.6g}": "                  d = {d:.6g}（缩放），m = {m:.6g}（最小值）",
    "dequantize() equals tl.load()'s float32 weight: {same}": "dequantize() 与 tl.load() 的 float32 权重相等：{same}",
    "bits per weight: Q4_1 (32 × 4 bits + two float16) / 32 = {q4}, Q8_0 (32 × 8 bits + one float16) / 32 = {q8}":
        "每个权重的位数：Q4_1（32 × 4 位 + 两个 float16）/ 32 = {q4}，Q8_0（32 × 8 位 + 一个 float16）/ 32 = {q8}",
    "{mb:8.1f} MB per step   {x:4.1f}× fewer than float32": "每步 {mb:8.1f} MB   float32 的字节数是它的 {x:4.1f} 倍",
    "float32": "float32",
    "bfloat16": "bfloat16",
    "int8 (Q8_0)": "int8 (Q8_0)",
    "4-bit (this file)": "4 位（本文件）",
    "                     MB/step roofline decode rate  measured  × float32  × bandwidth":
        "                       MB/步 Roofline 预测的解码速率   实测  × float32       × 带宽",
    "                     max |Δlogit|   mean KL  ppl English  ppl Chinese":
        "                    最大 |Δlogit|   平均 KL   英文困惑度   中文困惑度",
    "relative error against float32: {error:.0e}": "与 float32 相比的相对误差：{error:.0e}",
    "the avx2 kernel does not run here: {why}": "avx2 内核在这里不能运行：{why}",
    "the same logits within 1e-4: {same}": "两者的 logits 相差在 1e-4 以内：{same}",
    "{step:6.1f} ms a step, {matrices:5.1f} ms in the matrices, {outside:4.0%} outside":
        "每步 {step:6.1f} ms，矩阵占 {matrices:5.1f} ms，矩阵之外占 {outside:4.0%}",
    "fast path": "快速路径",
    "plain loop": "朴素循环",
    # the tables and lines of teachllm.cost, teachllm.roofline, teachllm.fastpath.kernels and lm.describe (their `tr`)
    "{phase}: batch {b}, {s} new token(s), {T} keys, {L} layers":
        "{phase}：批大小 {b}，{s} 个新 token，{T} 个键，{L} 层",
    "forward": "前向传播",
    "textbook": "教科书式的层",
    "operation          per layer        all layers   share": "运算                    每层            全部层    占比",
    "total       {per_layer:>16,}{total:>18,}  = {gflop:.3f} GFLOP":
        "合计        {per_layer:>16,}{total:>18,}  = {gflop:.3f} GFLOP",
    "operation           textbook            exact exact/book  why":
        "运算                  教科书             精确 精确/教科书  原因",
    "same (n_h·d = h)": "相同（n_h·d = h）",
    "n_h·d = {q}, not h = {h}": "n_h·d = {q}，不是 h = {h}",
    "same (n_kv·d = h)": "相同（n_kv·d = h）",
    "GQA: {n_kv} KV heads for {n_h} query heads, n_kv·d = {kv} not {h}":
        "GQA：{n_h} 个查询头共用 {n_kv} 个 KV 头，n_kv·d = {kv}，不是 {h}",
    "SwiGLU's third matrix; the textbook MLP has two": "SwiGLU 的第三个矩阵；教科书式的 MLP 只有两个",
    "same (f = 4h)": "相同（f = 4h）",
    "MLP width f = {f}, not 4h = {h4}": "MLP 宽度 f = {f}，不是 4h = {h4}",
    "the textbook counts the layers only; the LM head is 2·b·h·V per projected position":
        "教科书只计各层；LM head 每个经过它的位置 2·b·h·V",
    "24·b·s·h² + 4·b·s²·h per layer, against the real model": "每层 24·b·s·h² + 4·b·s²·h，对比真实模型",
    "cpu, {n} threads": "cpu，{n} 个线程",
    "{name} ({source}, {dtype}): peak {peak:.3g} TFLOP/s, bandwidth {bandwidth:.4g} GB/s, ridge {ridge:.1f} FLOP/byte":
        "{name}（{source}，{dtype}）：峰值 {peak:.3g} TFLOP/s，带宽 {bandwidth:.4g} GB/s，屋脊点 {ridge:.1f} FLOP/字节",
    "cached": "沿用缓存",
    "forced": "指定",
    "{n} thread": "{n} 个线程",
    "{n} threads": "{n} 个线程",
    "kernels on {cpu} ({capability} dispatch, {threads}, torch {torch}): {how}":
        "{cpu}（{capability} 分派，{threads}，torch {torch}）上的内核选择：{how}",
    " {when}, in {seconds:.1f} s": "（{when} 测得，测量用时 {seconds:.1f} s）",
    "  not considered: {kernels}": "  未考虑：{kernels}",
    "forced: outside the faithful bound, for comparison": "指定：超出允许的误差界，只用来比较",
    "fastest: {ms:.2f} ms a step (others: {others})": "最快：每步 {ms:.2f} ms（其他：{others}）",
    "a tie, closest to float32: {ms:.2f} ms a step (others: {others})":
        "不相上下，取最接近 float32 的：每步 {ms:.2f} ms（其他：{others}）",
    "{name}: every matrix in {dtype}, multiplied by F.linear": "{name}：每个矩阵都是 {dtype}，由 F.linear 相乘",
    "phase    batch length    GFLOP       MB  FLOP/B       ms  GFLOP/s    GB/s roof GFLOP/s":
        "阶段     批大小  长度    GFLOP       MB FLOP/字节     ms  GFLOP/s    GB/s 屋顶 GFLOP/s",
    "  matrices                             shape  kernel    why":
        "  矩阵                                  形状  内核      原因",
    "{name} paragraph: {chars} characters, {n_bytes} bytes, {tokens} tokens; perplexity {ppl:.2f} per token, "
    "{bpb:.2f} bits per byte":
        "{name}段落：{chars} 个字符，{n_bytes} 字节，{tokens} 个 token；"
        "每个 token 的困惑度 {ppl:.2f}，每字节 {bpb:.2f} 比特",
    "English": "英文",
    "Chinese": "中文",
    "Chinese ÷ English, in bits per byte: {ratio:.1f}": "按每字节的比特数，中文 ÷ 英文：{ratio:.1f}",
    # chapter 4: the same sentence in both languages
    "{name}: {chars} characters, {tokens} tokens, {mb:.2f} MB of cache":
        "{name}：{chars} 个字符，{tokens} 个 token，缓存 {mb:.2f} MB",
    "Chinese ÷ English: {ratio:.1f}× the tokens, and so the cache": "中文 ÷ 英文：token 数是 {ratio:.1f} 倍，缓存也是",
    # ---- issue 37, third pass: chapters 1–6's short lines (two English words were enough to be read as English)
    # chapter 1
    "{n} tokens": "{n} 个 token",
    # chapter 2
    "SmolLM2's BOS token: {id} {pieces}": "SmolLM2 的 BOS token：{id} {pieces}",
    "K, V: {shape} each": "K、V 各为 {shape}",
    "| finish reason: {reason}": "| 结束原因：{reason}",
    # chapter 2
    "SmolLM2 vocabulary size: {n}": "SmolLM2 的词表大小：{n}",
    "{n} special tokens": "{n} 个特殊 token",
    "word-level: {words} tokens, character-level: {chars} tokens, subword (SmolLM2): {subwords} tokens":
        "词级别：{words} 个 token，字符级别：{chars} 个 token，子词级别（SmolLM2）：{subwords} 个 token",
    "words: {words}": "词：{words}",
    "initial vocabulary: {alphabet}": "初始词表：{alphabet}",
    "merge {step}: {a!r} + {b!r} -> {result!r}   pair counts: {counts}":
        "第 {step} 次合并：{a!r} + {b!r} -> {result!r}   相邻符号对的计数：{counts}",
    "after {n} merges: {pieces}": "{n} 次合并之后：{pieces}",
    "first 12 merges: {merges}": "前 12 次合并：{merges}",
    "'er' is merge number {n}": "'er' 是第 {n} 次合并",
    "SmolLM2: {n} merges; the first 8: {first}": "SmolLM2：{n} 条合并规则；前 8 条：{first}",
    "{n:>3} merges: {pieces:>2} pieces": "{n:>3} 次合并：{pieces:>2} 个片段",
    "{text}: {chars} characters, {n} tokens": "{text}：{chars} 个字符，{n} 个 token",
    "continued: {text!r}": "续写：{text!r}",
    "chat answer: {text!r}": "对话中的回答：{text!r}",
    # chapter 3
    "greedy     : {token!r}": "贪婪解码：{token!r}",
    "10 samples : {tokens}": "10 次采样：{tokens}",
    "{n} tokens: {pieces}": "{n} 个 token：{pieces}",
    "{name}: weight {shape}  [out, in]": "{name}：权重 {shape}  [out, in]",
    "layers L = {L}, hidden h = {h}, query heads n_h = {n_h}, KV heads n_kv = {n_kv}, head dim d = {d}, "
    "MLP width f = {f}, vocabulary V = {V:,}":
        "层数 L = {L}，隐藏维度 h = {h}，查询头 n_h = {n_h}，KV 头 n_kv = {n_kv}，头维度 d = {d}，"
        "MLP 宽度 f = {f}，词表大小 V = {V:,}",
    "{pieces} same id: {same}": "{pieces} id 相同：{same}",
    "same embedding vector: {same}": "嵌入向量相同：{same}",
    "query heads per KV head: g = {g}": "每个 KV 头对应的查询头数：g = {g}",
    "   ← key position": "   ← 键的位置",
    "head 2's output by hand = the trace's z: {shape}": "手算的 2 号头输出 = 追踪记录中的 z：{shape}",
    "o_proj(all {n} heads) = the trace's attn_out: {shape}": "o_proj（全部 {n} 个头）= 追踪记录中的 attn_out：{shape}",
    # chapter 4
    "all {L} layers: cache = prefill's K and V = the uncached run's K and V":
        "全部 {L} 层：缓存 = 预填充算出的 K 和 V = 不带缓存的运行算出的 K 和 V",
    "key →": "键 →",
    "query {i:>2}": "查询 {i:>2}",
    # chapter 5
    "mask: {shape} all True: {all_true}": "掩码 {shape} 是否全为 True：{all_true}",
    "call                         tokens   GFLOP  MB moved  FLOP/byte":
        "调用                        token 数   GFLOP   搬运 MB  FLOP/字节",
    "prefill, {n}-token prompt": "预填充，{n} 个 token 的提示词",
    "decode step, T = {T}": "解码步，T = {T}",
    # chapter 6
    "logits row {row} holds NaN (token {token}, and maybe others): the model's output is broken, and no token can be "
    "chosen from it":
        "第 {row} 行 logits 含有 NaN（id 为 {token} 的 token，可能还有别的）：模型的输出已经坏了，从中选不出任何 token",
    "logits row {row}: every token is ruled out (all logits are -inf), so none can be chosen; usually the "
    "penalties and filters removed them all":
        "第 {row} 行 logits 中的每个 token 都被排除了（logits 全为 -inf），所以一个也选不出："
        "通常是惩罚或过滤规则把它们全删掉了",
    "logits row {row} holds NaN, or every token in it is ruled out: the model's output is broken, and no token can "
    "be chosen from it (found at a read-back of the fast path)":
        "第 {row} 行 logits 含有 NaN，或者其中每个 token 都被排除了：模型的输出已经坏了，从中选不出任何 token"
        "（在快速路径读回结果时发现）",
    "SamplingParams: beam search (num_beams={n}) is deterministic and does not take {taken}; leave them at their "
    "defaults (temperature 0 or 1)":
        "SamplingParams：束搜索（num_beams={n}）是确定性的，不接受 {taken}；"
        "请让这些参数保持默认值（temperature 为 0 或 1）",
    "sure": "有把握",  # chapter 6's two prompts, named as its prose names them
    "open": "开放",
    '"{name}" prompt ({text})': "“{name}”提示词（{text}）",
    "{name}: {tokens}": "“{name}”提示词：{tokens}",
    "{name}: largest logits": "“{name}”：最大的 logits",
    "{name}: greedy picks {token!r}": "“{name}”：贪婪解码选中 {token!r}",
    "after top-k = {k}": "top-k = {k} 之后",
    "after T = {T}": "T = {T} 之后",
    "original:": "原始：",
    "kept mass {kept:.2f}; 0.40 / {kept:.2f} = {p:.2f}": "保留的概率 {kept:.2f}；0.40 / {kept:.2f} = {p:.2f}",
    "p = 0.6 keeps {kept}": "p = 0.6 时保留：{kept}",
    "notes example, p = {p:<4}: {n} tokens kept": "课程资料的例子：p = {p:<4} 时保留 {n} 个 token",
    "T = {T}: top-p 0.9 keeps {n:>5} tokens": "T = {T}：top-p 0.9 保留 {n:>5} 个 token",
    "{name}: top token p = {top:.3f}, min-p 0.1 keeps tokens with p ≥ {threshold:.4f}: {n} tokens":
        "“{name}”：最高的概率 p = {top:.3f}，min-p 0.1 保留 p ≥ {threshold:.4f} 的 token：{n} 个",
    "top-k, then top-p (transformers):": "先 top-k 再 top-p（transformers）",
    "top-p, then top-k:": "先 top-p 再 top-k",
    "transformers: top-p 0.8, then min-p 0.3:": "transformers：先 top-p 0.8，再 min-p 0.3：",
    "vLLM:         min-p 0.3, then top-p 0.8:": "vLLM：        先 min-p 0.3，再 top-p 0.8：",
    "min-p thresholds: transformers 0.3 × {hf:.2f} = {hf_min:.2f}, vLLM 0.3 × {vllm:.2f} = {vllm_min:.2f}":
        "min-p 的阈值：transformers 0.3 × {hf:.2f} = {hf_min:.2f}，vLLM 0.3 × {vllm:.2f} = {vllm_min:.2f}",
    "{name}: transformers' order keeps {n_hf} tokens, vLLM's order keeps {n_vllm}":
        "“{name}”：按 transformers 的顺序保留 {n_hf} 个 token，按 vLLM 的顺序保留 {n_vllm} 个",
    "top-p 0.5 keeps token(s) {ids}": "top-p 0.5 保留的 token：{ids}",
    "| greedy picks": "| 贪婪解码选中",
    "| sampling picks": "| 采样选中",
    # ---- the Chinese reviewer's fixes, chapters 4–6
    # chapter 4
    "generated: {text!r}": "生成的文本：{text!r}",
    "step {step:>2} ({phase}): ": "第 {step:>2} 步（{phase}）：",
    "{n:>2} of {capacity} slots, {used:>9,} bytes = formula {formula:>9,}":
        "{capacity} 个槽位用了 {n:>2} 个，{used:>9,} 字节 = 公式给出的 {formula:>9,}",
    # chapter 6
    "sum = {total:.4f}, entropy = {bits:.3f} bits": "概率和 = {total:.4f}，熵 = {bits:.3f} 比特",
    "odds = {odds:.3f}": "比值 = {odds:.3f}",
    "top-3:": "top-3 后：",
    "same {n} surviving tokens, same logits (the top 5 tokens' probabilities: {top})":
        "留下的 {n} 个 token 相同，logits 也相同（前 5 个 token 的概率：{top}）",
    # ---- the lines issue 37 found with numbers between their words (tests/test_zh_outputs.py), by chapter
    # chapter 1
    "sum of all {n} probabilities: {total:.4f}": "全部 {n} 个概率之和：{total:.4f}",
    # chapter 2
    "    id  piece    text": "    id  词表条目 文本",
    "decoded: {text!r}": "反分词结果：{text!r}",
    "  our BPE : {per_word:.2f} tokens/word  {pieces}": "  我们的 BPE：每个词 {per_word:.2f} 个 token  {pieces}",
    "  SmolLM2 : {per_word:.2f} tokens/word  {pieces}": "  SmolLM2：   每个词 {per_word:.2f} 个 token  {pieces}",
    "{text!r}: characters {chars}, UTF-8 bytes {n_bytes}, tokens {tokens}":
        "{text!r}：{chars} 个字符，{n_bytes} 个 UTF-8 字节，{tokens} 个 token",
    # chapter 3
    "stage      shape              RMS first token  RMS last token":
        "阶段       形状               首 token 的 RMS 末 token 的 RMS",
    "embedding": "嵌入",
    "final norm": "最终归一化",
    "resid_mid = resid_in + attn_out, resid_out = resid_mid + mlp_out, and layer 2 reads layer 1's output":
        "resid_mid = resid_in + attn_out，resid_out = resid_mid + mlp_out，第 2 层读入的正是第 1 层的输出",
    "prompt of {n:>5} tokens: LM head {every:8.2f} → {engine:.3f} GFLOP; saves {saved:8.2f} GFLOP = {share:.0%} of fo"
    "rward's work (attention is {attention:.0%})":
        "{n:>5} 个 token 的提示词：LM head {every:8.2f} → {engine:.3f} GFLOP；省下 {saved:8.2f} GFLOP，占前向传播计算"
        "量的 {share:.0%}（注意力占 {attention:.0%}）",
    "layer 18, head 6: the last token ' is' → ' Paris' {p:.3f}":
        "第 18 层，6 号头：最后一个 token ' is' 对 ' Paris' 的注意力为 {p:.3f}",
    # chapter 4
    "S = {S} tokens, then {n}: the model appended {token!r}":
        "S = {S} 个 token，然后是 {n} 个：模型在末尾添上了 {token!r}",
    "2 · {L} · {n_kv} · {d} · {size} bytes = {per_token:,} bytes per token":
        "2 · {L} · {n_kv} · {d} · {size} 字节 = 每个 token {per_token:,} 字节",
    "used:      {n:>2} tokens × {per_token:,} = {used:>9,} bytes":
        "已使用：{n:>2} 个 token × {per_token:,} = {used:>9,} 字节",
    "allocated: {n:>2} slots  × {per_token:,} = {allocated:>9,} bytes ({share:.0%} in use)":
        "已分配：{n:>2} 个槽位   × {per_token:,} = {allocated:>9,} 字节（{share:.0%} 在用）",
    "KV cache at {n:,} tokens: {cache:.0f} MB; weights: {weights:.0f} MB (both in {dtype})":
        "{n:,} 个 token 的 KV 缓存：{cache:.0f} MB；权重：{weights:.0f} MB（都是 {dtype}）",
    "multi-head (n_kv = n_h)": "多头注意力（n_kv = n_h）",
    "grouped-query, SmolLM2": "分组查询注意力，SmolLM2",
    "multi-query": "多查询注意力",
    "n_kv = {n_kv}: {size:>7,} bytes per token": "n_kv = {n_kv}：每个 token {size:>7,} 字节",
    "model                    L  n_kv    d   per token  4,096 tokens   weights":
        "模型                     L  n_kv    d  单个 token  4,096 个 token     权重",
    "growth per step: {growth:,} bytes = one token's K and V": "每步增长：{growth:,} 字节 = 一个 token 的 K 和 V",
    # chapter 5
    "prefill of {S} tokens → {token!r}; {cache}": "预填充 {S} 个 token → {token!r}；{cache}",
    "decode step fed {fed!r} → {chosen!r}; {cache}": "解码步送入 {fed!r} → {chosen!r}；{cache}",
    "q_new, k_new, v_new by hand = the decode step's: {q} {k}": "手算的 q_new、k_new、v_new 与解码步的相同：{q} {k}",
    "probs {p} and attn_out {o} by hand = the decode step's": "手算的 probs {p} 和 attn_out {o} 与解码步的相同",
    "layer 1's output by hand = the decode step's; cache slot 12 holds k_new and v_new":
        "手算的第 1 层输出与解码步的相同；缓存的 12 号槽位存着 k_new 和 v_new",
    "  fed {fed!r:<11} cache length {n:>2} → next {chosen!r}": "  送入 {fed!r:<11} 缓存长度 {n:>2} → 下一个 {chosen!r}",
    "prefill: cache length {n} → first token {first!r}": "预填充：缓存长度 {n} → 第一个 token {first!r}",
    # chapter 6
    "uniform over all {n:,} tokens: {bits:.3f} bits": "在全部 {n:,} 个 token 上均匀分布：{bits:.3f} 比特",
    "at T = 100 the entropy is {gap:.4f} bits below uniform": "T = 100 时，熵比均匀分布低 {gap:.4f} 比特",
    "at T = 0.5: sure {sure:.3f} bits, open {open:.3f} bits":
        "T = 0.5 时：“有把握”提示词 {sure:.3f} 比特，“开放”提示词 {open:.3f} 比特",
    "words drawn in {n} samples: {words}": "{n} 次抽样抽到的词：{words}",
    "{name}: top-{k:<3} keeps {mass:.3f} of the probability": "“{name}”：top-{k:<3} 保留了 {mass:.3f} 的概率",
    "sorted:": "排序后：",
    "cumulative:": "累积：",
    "normalised:": "归一化后：",
    "top-p {p} keeps {n} tokens holding {mass:.2f} of the probability":
        "top-p {p} 保留了 {n} 个 token，共占 {mass:.2f} 的概率",
    "   T mean log p  text (random seed 0, 24 tokens)": "   T 平均 log p  文本（随机种子 0，24 个 token）",
    # chapter 11
    "                           static  continuous  ratio": "                             静态        连续   比值",
    "total time (s)": "总时间（秒）",
    "tokens/s (all requests)": "吞吐量（token/s）",
    "short: mean latency (s)": "短请求：平均延迟（秒）",
    "long: mean latency (s)": "长请求：平均延迟（秒）",
    "mean TTFT (s)": "平均 TTFT（秒）",
    "whole prompt": "整段预填充",
    "chunked, budget 32": "分块，预算 32",
    "decoders' longest gap between two tokens: {gap:6.0f} ms, long prompt's TTFT: {ttft:6.0f} ms":
        "解码请求两个 token 之间最长的间隔：{gap:6.0f} ms，长提示词的 TTFT：{ttft:6.0f} ms",
    # chapter 12
    "K and V of one token: {n:,} bytes ({kib:.0f} KiB)": "一个 token 的 K 和 V：{n:,} 字节（{kib:.0f} KiB）",
    "tokens held:": "持有的 token：",
    "contiguous, reserved:": "连续缓存，预留：",
    "paged, 16-token blocks:": "分页，每块 16 个 token：",
    "{n:>5} slots = {mib:6.1f} MiB, wasted {wasted:.1%}": "{n:>5} 个槽位 = {mib:6.1f} MiB，浪费 {wasted:.1%}",
    "{n:>5} slots = {mib:6.1f} MiB, wasted {wasted:.1%} ({blocks} blocks: {sizes})":
        "{n:>5} 个槽位 = {mib:6.1f} MiB，浪费 {wasted:.1%}（{blocks} 个块：{sizes}）",
    "request {i}: {n} tokens → blocks {table}": "请求 {i}：{n} 个 token → 块 {table}",
    "request 0 finished; request 2: {n} tokens → blocks {table} (not contiguous)":
        "请求 0 已结束；请求 2：{n} 个 token → 块 {table}（不连续）",
    # ---- issue 37, third pass: chapters 7–12's short lines
    # chapter 7
    "repeated 3-grams in the output: {n}": "输出中重复出现的 3-gram：{n}",
    "top 5 logits: {top}": "logit 最高的 5 个 token：{top}",
    "top 5 after: {top}": "处理后 logit 最高的 5 个 token：{top}",
    "greedy": "贪婪解码",
    "token     c   logit   after": "token     c   logit  处理后",
    "loss: {losses}": "logit 减少量：{losses}",
    "last {n} tokens: {suffix} -> banned: {banned}": "最后 {n} 个 token：{suffix} → 被禁止：{banned}",
    "rule                           dog logit  p(dog)  top token":
        "规则                        dog 的 logit  p(dog)  logit 最大的 token",
    "repetition 1.2": "重复惩罚 1.2",
    "presence 0.5 + frequency 0.5": "存在惩罚 0.5 + 频率惩罚 0.5",
    "no-repeat 3-gram": "禁止重复 3-gram",
    "repeated 3-grams: {n:>2}   {text!r}": "重复的 3-gram：{n:>2}   {text!r}",
    "no penalty": "不加惩罚",
    "QA / code: repetition 1.05 + frequency 0.5": "问答 / 代码：重复惩罚 1.05 + 频率惩罚 0.5",
    "creative: presence 0.3": "创作、诗歌：存在惩罚 0.3",
    # chapter 8
    "sampling (T=1, seed 0)": "采样（T=1，随机种子 0）",
    "beam search (k=3)": "束搜索（k=3）",
    "total log p = {lp:8.3f}   {text!r}": "总 log p = {lp:8.3f}   {text!r}",
    "beam ÷ greedy probability: e^{gap:.2f} = {ratio:.1f}×": "束搜索与贪婪解码的概率之比：e^{gap:.2f} = {ratio:.1f}×",
    "step {n}": "第 {n} 步",
    "   running   {score:8.3f}  {text!r}": "   运行中    {score:8.3f}  {text!r}",
    "   finished  {score:8.3f}  {text!r}  (sum / length)": "   已完成    {score:8.3f}  {text!r}（和 / 长度）",
    "    greedy              log p   beam search         log p":
        "    贪婪解码            log p   束搜索              log p",
    "sum  {greedy:>24.3f}   {beam:>25.3f}": "合计 {greedy:>24.3f}   {beam:>25.3f}",
    "   score {score:8.4f} = {total:7.3f} / {length:>2}^{lp:.0f}   {text!r}":
        "   得分 {score:8.4f} = {total:7.3f} / {length:>2}^{lp:.0f}   {text!r}",
    "length      sum  {lps}  text": "  长度     总和  {lps}  文本",
    "best at lp = {lp}: {text!r}": "lp = {lp} 时得分最高：{text!r}",
    # chapter 9
    "tokens        : {n}, last one {id} = {piece!r}": "token 数      : {n}，最后一个是 {id} = {piece!r}",
    "this model's EOS ids: {ids} {pieces}": "本模型的 EOS id：{ids} {pieces}",
    "with include_stop_str_in_output: {text!r}": "设置 include_stop_str_in_output 时：{text!r}",
    "tokens: {tokens}": "各 token：{tokens}",
    "pieces: {pieces}": "token 片段：{pieces}",
    "step  token         p(EOS)  EOS masked?": "  步  token         p(EOS)  EOS 被屏蔽？",
    "yes": "是",
    "no": "否",
    "{text!r} | finish reason: {reason}": "{text!r} | 结束原因：{reason}",
    "token by token : {pieces}": "逐个 token：{pieces}",
    "joined         : {text}": "拼接起来：{text}",
    "stream pieces  : {pieces}": "流式片段：{pieces}",
    "full text      : {text}": "完整文本：{text}",
    # chapter 10
    "qk + pv (bmm)": "qk 和 pv（bmm）",
    # chapter 11
    "Llama-2-7B: {params:.2f} B parameters, {gb:.1f} GB of weights in float16":
        "Llama-2-7B：{params:.2f} B 个参数，float16 的权重共 {gb:.1f} GB",
    "SmolLM2-135M: {params:.1f} M parameters, {mb:.0f} MB of weights in {dtype} (what runs here)":
        "SmolLM2-135M：{params:.1f} M 个参数，{dtype} 的权重共 {mb:.0f} MB（这里运行的就是它）",
    "batch 1: {flops:.2f} FLOPs per weight": "批大小 1：每个权重 {flops:.2f} FLOPs",
    "{n} row(s) × LM head: {ms:5.1f} ms ({rate:,.0f} rows/s)": "{n} 行 × LM head：{ms:5.1f} ms（每秒 {rate:,.0f} 行）",
    "prompt tokens: {lengths}": "提示词 token 数：{lengths}",
    "output tokens: {lengths}": "输出 token 数：{lengths}",
    # chapter 12
    "Llama-2-7B, contiguous: {gib:.2f} GiB": "Llama-2-7B，连续缓存：{gib:.2f} GiB",
    "Llama-2-7B, paged     : {gib:.2f} GiB": "Llama-2-7B，分页缓存：{gib:.2f} GiB",
    "Llama-2-7B, one token: {mib:.2f} MiB": "Llama-2-7B，一个 token：{mib:.2f} MiB",
    "pool: {blocks} blocks × {size} slots = {slots} slots": "池：{blocks} 个块 × 每块 {size} 个槽位 = {slots} 个槽位",
    "block size {size:>2}: max |paged − contiguous| = {error:.0e}":
        "块大小 {size:>2}：|分页 − 连续| 的最大值 = {error:.0e}",
    "{n} tokens: contiguous {c_slots} slots = {c_mib:.2f} MiB, paged {p_slots} slots = {p_mib:.2f} MiB":
        "{n} 个 token：连续缓存 {c_slots} 个槽位 = {c_mib:.2f} MiB，分页缓存 {p_slots} 个槽位 = {p_mib:.2f} MiB",
}
