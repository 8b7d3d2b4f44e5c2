build/gen/schema_sql.o: build/gen/schema_sql.c
