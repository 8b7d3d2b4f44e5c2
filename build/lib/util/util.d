build/lib/util/util.o: lib/util/util.c lib/util/util.h
lib/util/util.h:
