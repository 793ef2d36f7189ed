package n
