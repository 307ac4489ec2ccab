/* queens_count.h: the sequential part of the n-queens count, shared by the peers
 * (queens_omp.c, queens_tbb.cpp) and the same as samples/ebs/queens.tc's: the
 * completions of a board whose occupied columns and diagonals are bit masks. */
#ifndef QUEENS_COUNT_H
#define QUEENS_COUNT_H

static long long count_seq(unsigned all, unsigned cols, unsigned ld, unsigned rd)
{
    long long count = 0;
    unsigned free_ = all & ~(cols | ld | rd);
    if (cols == all)
        return 1;
    while (free_) {
        unsigned bit = free_ & -free_;
        free_ -= bit;
        count += count_seq(all, cols | bit, (ld | bit) << 1, (rd | bit) >> 1);
    }
    return count;
}

#endif
