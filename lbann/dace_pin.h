/*
 * The pin of a library `convjit export --dace` writes: which descriptor it
 * serves and which backend and variant were chosen for it at export.
 *
 * The DaCe shim (dace_shim.cpp) carries one, unstamped, in its own ELF
 * section; export stamps each copy of the shim in place (dace_pin_stamp),
 * so a library is one self-contained file that says what it runs
 * (`convjit describe --name lib<descriptor>.so`).
 */
#ifndef CONVJIT_LBANN_DACE_PIN_H
#define CONVJIT_LBANN_DACE_PIN_H

#include <stdint.h>

#define CONVJIT_DACE_PIN_SECTION ".convjit_pin"
#define CONVJIT_DACE_PIN_MAGIC "convjit-dace-pin" /* 16 bytes, no NUL in the pin */
#define CONVJIT_DACE_PIN_VERSION 1u

typedef struct convjit_dace_pin {
  char magic[16];
  uint32_t version;      /* 0: the unstamped shim */
  uint32_t device_kind;  /* convjit_device_kind_t */
  int64_t chosen_batch;  /* the batch the choice was made at */
  char descriptor[1024]; /* NUL-terminated, as in lib<descriptor>.so */
  char backend[32];
  char variant[64];
  char reason[384]; /* why: the policy, or the measurement */
} convjit_dace_pin_t;

#endif /* CONVJIT_LBANN_DACE_PIN_H */
