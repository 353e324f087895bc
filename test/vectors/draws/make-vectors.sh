#!/usr/bin/env bash
# Makes test/vectors/draws/vectors.json with openssl, bash and jq only (no code of this repository),
# so the vectors check src/domain/ledger/draw-algorithm.ts against an independent computation of
# gats-draw-v1 (docs/architecture/stores-and-rewards.md). Run from the repository root:
#   bash test/vectors/draws/make-vectors.sh > test/vectors/draws/vectors.json
set -euo pipefail

# A table's entries and their RFC 8785 (JCS) form, written out by hand: sorted keys, no whitespace.
TABLE_JCS='[{"outcome":{"amount":"50","assetId":"gold"},"weight":70},{"outcome":{"nft":{"metadata":{"attributes":[],"creator":"Example Studio","image":"https://cdn.example-game.com/items/dragon-egg.png"},"name":"Dragon Egg"}},"weight":5},{"outcome":null,"weight":25}]'
TABLE_HASH=$(printf '%s' "$TABLE_JCS" | openssl dgst -sha256 -r | cut -d' ' -f1)

vector() { # seed clientSeed nonce roll tableId tableHash total
  local seed=$1 client=$2 nonce=$3 roll=$4 table=$5 hash=$6 total=$7
  local commitment bits mask attempt msg block x candidate
  commitment=$(printf '%s' "$seed" | xxd -r -p | openssl dgst -sha256 -r | cut -d' ' -f1)
  bits=0; while (( (1 << bits) < total )); do bits=$((bits + 1)); done   # bitlength(total - 1)
  mask=$(( (1 << bits) - 1 ))
  local blocks='[]'
  for ((attempt = 0; ; attempt++)); do
    msg=$(printf 'gats-draw-v1\n%s\n%s\n%s\n%s\n%s\n%s' "$client" "$nonce" "$roll" "$table" "$hash" "$attempt")
    block=$(printf '%s' "$msg" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$seed" -r | cut -d' ' -f1)
    blocks=$(jq -c --arg b "$block" '. + [$b]' <<<"$blocks")
    x=$((16#${block:0:16}))             # two's complement: the low `bits` bits are exact
    candidate=$((x & mask))
    if ((candidate < total)); then break; fi
  done
  jq -nc --arg seed "$seed" --arg commitment "$commitment" --arg client "$client" --argjson nonce "$nonce" \
    --argjson roll "$roll" --arg table "$table" --arg hash "$hash" --arg total "$total" \
    --argjson blocks "$blocks" --arg value "$candidate" --argjson attempts $((attempt + 1)) \
    '{serverSeed: $seed, commitment: $commitment, clientSeed: $client, nonce: $nonce, roll: $roll,
      tableId: $table, tableHash: $hash, total: $total, blocks: $blocks, value: $value, attempts: $attempts}'
}

SEED_A=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED_B=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
{
  vector "$SEED_A" lucky-7 0 0 dtb_01JD4B0000000000000000000A "$TABLE_HASH" 100
  vector "$SEED_A" lucky-7 1 0 dtb_01JD4B0000000000000000000A "$TABLE_HASH" 100
  vector "$SEED_A" lucky-7 1 1 dtb_01JD4B0000000000000000000B "$TABLE_HASH" 3
  vector "$SEED_B" 'player chosen: ünïcödé' 41 0 dtb_01JD4B0000000000000000000A "$TABLE_HASH" 5
  vector "$SEED_B" x 7 2 dtb_01JD4B0000000000000000000C "$TABLE_HASH" 1
  for nonce in 0 1 2 3 4 5 6 7; do
    vector "$SEED_B" discard "$nonce" 0 dtb_01JD4B0000000000000000000A "$TABLE_HASH" 5
  done
  vector "$SEED_B" big 3 0 dtb_01JD4B0000000000000000000A "$TABLE_HASH" 281474976710655
} | jq -s --arg jcs "$TABLE_JCS" --arg hash "$TABLE_HASH" \
  '{algorithm: "gats-draw-v1", table: {jcs: $jcs, hash: $hash}, rolls: .}'
