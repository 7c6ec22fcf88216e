/* A C trainer's collective preload: libconvjit_mpi's communicator over
 * MPI_COMM_WORLD, then convjit_preload_collective with the names given on
 * the command line (each rank passes them all; the job compiles each once).
 * Prints one line per rank; exits 1 when the call fails. */
#include <stdio.h>

#include "convjit/convjit.h"
#include "convjit/convjit_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  convjit_communicator_t comm;
  if (convjit_mpi_communicator(MPI_COMM_WORLD, 1, &comm) != 0) {
    fprintf(stderr, "convjit_mpi_communicator failed\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  convjit_preload_summary_t summary;
  const convjit_status_t status = convjit_preload_collective(
      &comm, (const char* const*)(argv + 1), (size_t)(argc - 1), "sm_90", 1, &summary);
  printf("rank %d: status %d distinct %zu compiled %zu compiled_here %zu local_entries %zu %s\n",
         comm.rank, (int)status, summary.distinct, summary.compiled, summary.compiled_here,
         summary.local_entries,
         status == CONVJIT_STATUS_SUCCESS ? "" : convjit_last_error_message());
  convjit_mpi_communicator_free(&comm);
  MPI_Finalize();
  return status == CONVJIT_STATUS_SUCCESS ? 0 : 1;
}
