"""Sample texts shared by the tests, the benchmarks and the chapters, so that each exists once.

Both paragraphs were written for teachllm. The English one is long enough for prompts of a few hundred
tokens when repeated; the Chinese one tells the same story from its beginning in China.
"""

ENGLISH = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
           "movable metal type, oil-based ink and a wooden screw press adapted from wine making. Within fifty "
           "years, presses had spread to more than two hundred cities across Europe, the price of books fell "
           "sharply, and pamphlets carried news, sermons and arguments further than any handwritten copy. ")

CHINESE = ("印刷术是中国古代四大发明之一。早在唐朝，人们就开始使用雕版印刷书籍。到了北宋时期，毕昇发明了"
           "活字印刷术，用胶泥制成单个的字，排版之后可以反复使用，大大提高了印刷的效率。这项技术后来"
           "传到了朝鲜、日本和欧洲，对世界文化的传播产生了深远的影响。")
