/**
 * Loaded with `--import` into a server the tests spawn (contractCheckingEnv):
 * checks its answers against openapi.json like the tests' own apps, and
 * appends each violation to CONTRACT_VIOLATIONS_FILE for the test to fail on.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { FastifyInstance } from 'fastify';
import { appendTo, OPENAPI_FILE, responseContractOfFile } from './response-contract.js';

const file = process.env.CONTRACT_VIOLATIONS_FILE;
if (file) {
  // CONTRACT_OPENAPI_FILE: another document, for the test of this hook itself.
  const contract = responseContractOfFile(appendTo(file), process.env.CONTRACT_OPENAPI_FILE ?? OPENAPI_FILE);
  subscribe('fastify.initialization', (message) => contract.watch((message as { fastify: FastifyInstance }).fastify));
}
