/**
 * Loaded with `--import` into a server the tests spawn (contractCheckingEnv):
 * checks its answers against openapi.json like the tests' own apps, and
 * appends each violation to CONTRACT_VIOLATIONS_FILE for the test to fail on.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { FastifyInstance } from 'fastify';
import { appendTo, responseContractOfFile } from './response-contract.js';

const file = process.env.CONTRACT_VIOLATIONS_FILE;
if (file) {
  const contract = responseContractOfFile(appendTo(file));
  subscribe('fastify.initialization', (message) => contract.watch((message as { fastify: FastifyInstance }).fastify));
}
