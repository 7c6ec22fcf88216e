/*
 * libconvjit_mpi: convjit's collective preload on MPI.
 *
 * The core library never links MPI; convjit_preload_collective takes its
 * communicator as callbacks (convjit.h).  This small library, linked with
 * MPI, makes them from an MPI_Comm for C and C++ trainers:
 *
 *   convjit_communicator_t comm;
 *   if (convjit_mpi_communicator(MPI_COMM_WORLD, 0, &comm) != 0) ...;
 *   convjit_preload_collective(&comm, names, count, "sm_90", 0, &summary);
 *   convjit_mpi_communicator_free(&comm);
 *
 * Every function is collective over the communicator.  They return 0, or an
 * MPI error code.
 */
#ifndef CONVJIT_CONVJIT_MPI_H
#define CONVJIT_CONVJIT_MPI_H

#include <mpi.h>

#include "convjit/convjit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A communicator over a duplicate of `comm` (convjit's messages never mix
 * with the caller's), whose errors return rather than abort.  Its ranks are
 * grouped into nodes by MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or, with
 * ranks_per_node > 0, every ranks_per_node consecutive ranks form a node
 * (to try several nodes' worth of tiers on one machine). */
int convjit_mpi_communicator(MPI_Comm comm, int ranks_per_node, convjit_communicator_t* out);

/* Frees what convjit_mpi_communicator made; *comm is zeroed. */
int convjit_mpi_communicator_free(convjit_communicator_t* comm);

/* For programs that do not start MPI themselves (`convjit preload --mpi`
 * loads this library with dlopen): MPI_Init_thread when MPI is not yet
 * initialised, then a communicator over MPI_COMM_WORLD; and the matching
 * end, which finalises MPI only if convjit_mpi_world_init started it. */
int convjit_mpi_world_init(int ranks_per_node, convjit_communicator_t* out);
int convjit_mpi_world_finalize(convjit_communicator_t* comm);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_CONVJIT_MPI_H */
