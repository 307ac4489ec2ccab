/* Shared by every file that starts `offset`. */
THREADED offset(SPTR done, int by, int *GLOBAL out);
