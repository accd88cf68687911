// vitest globalSetup (runs in Node): starts one s3rver process for the workerd project, whose
// tests cannot spawn processes, and hands its endpoint to them as inject('s3rverEndpoint').

import type { TestProject } from 'vitest/node';
import { S3rverProcess } from './s3rver-harness.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    s3rverEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  const server = new S3rverProcess();
  await server.start();
  project.provide('s3rverEndpoint', server.endpoint);
  return () => server.dispose();
}
