"""Sample texts shared by the tests, the benchmarks and the chapters, so that each exists once.

Both paragraphs were written for teachllm. The English one is long enough for prompts of a few hundred
tokens when repeated; the Chinese one explains, in the course's own terms, what the chapters teach.
"""

ENGLISH = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
           "movable metal type, oil-based ink and a wooden screw press adapted from wine making. Within fifty "
           "years, presses had spread to more than two hundred cities across Europe, the price of books fell "
           "sharply, and pamphlets carried news, sermons and arguments further than any handwritten copy. ")

CHINESE = ("大语言模型生成文本分为两个阶段。第一个阶段叫预填充：模型一次读入整段提示词，并行计算每个位置的键和值，"
           "把它们存进 KV 缓存，然后给出第一个 token 的概率分布。第二个阶段叫解码：模型每一步只处理一个新 token，"
           "从 KV 缓存里读出之前所有位置的键和值，算出下一个 token 的 logits，再由采样器按温度、top-k、top-p "
           "等规则选出一个 token。预填充的计算量大，但可以充分利用矩阵乘法，是计算受限的；解码每一步都要把全部"
           "权重从内存里读一遍，计算却很少，是访存受限的。所以首 token 时延主要由预填充决定，而每个输出 token "
           "的时延主要由解码决定。服务很多请求时，连续批处理让新请求随时加入正在解码的批次，分页的 KV 缓存"
           "按块分配显存，减少碎片，还能让前缀相同的请求共享同一批块。")
