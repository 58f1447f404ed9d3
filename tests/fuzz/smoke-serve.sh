#!/bin/sh
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# make check: fuzz_serve for a few seconds (smoke.sh).
exec bash "$(dirname "$0")/smoke.sh" serve
