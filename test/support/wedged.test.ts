/**
 * The liveness probe of the suites that share one gateway (wedged.ts `unanswered`): a connection
 * reset is asked once more before it counts (a keep-alive socket the gateway closed while idle);
 * only its own deadline means "no answer"; a refused connection is reported with its cause. And
 * the reading of a busy workerd's frames (`threadFrames`), which names the one cause of a hang
 * found so far when its frames are there.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { threadFrames, unanswered } from './wedged.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A server whose n-th request (from 1) `answer` handles: true answers 200, false resets the connection, null never answers. */
async function serve(answer: (n: number) => boolean | null): Promise<URL> {
  let n = 0;
  server = createServer((req, res) => {
    const a = answer(++n);
    if (a === true) res.end();
    else if (a === false) req.socket.destroy();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/probe`);
}

describe('unanswered', () => {
  it('a connection reset once is asked again: the gateway answers', async () => {
    const url = await serve((n) => n > 1);
    expect(await unanswered(url, 5000)).toBeUndefined();
  });

  it('reset every time: reported with what failed', async () => {
    const url = await serve(() => false);
    expect(await unanswered(url, 5000)).toMatch(/^the gateway did not answer a HEAD within 5 s \(fetch failed: .+\)/);
  });

  it('no answer: reported once its own deadline passed, not asked again', async () => {
    let asked = 0;
    const url = await serve(() => (asked++, null));
    expect(await unanswered(url, 300)).toMatch(/^the gateway did not answer a HEAD within 0.3 s/);
    expect(asked).toBe(1);
  });
});

describe('threadFrames', () => {
  // gdb's `thread apply all bt` of the drill's workerd when it stopped answering (2026-12-07), cut short.
  const main = [
    'Thread 1 (Thread 0x7f850c48abc0 (LWP 22912) "workerd"):',
    '#0  0x000055ac15163ffd in cppgc::internal::Sweeper::SweeperImpl::IncrementalSweepTask::~IncrementalSweepTask() ()',
    '#1  0x000055ac1569dd0f in v8::platform::DefaultPlatform::PumpMessageLoop(v8::Isolate*, v8::platform::MessageLoopBehavior) ()',
    '#2  0x000055ac13d53be7 in kj::_::Deferred<workerd::IoContext::runImpl(workerd::IoContext::Runnable&)>::~Deferred() ()',
  ];
  const parked = [
    'Thread 4 (Thread 0x7f850bf566c0 (LWP 22915) "V8 DefaultWorke"):',
    '#0  syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38',
    '#7  0x000055ac14c5fe8d in v8::internal::CollectionBarrier::AwaitCollectionBackground(v8::internal::LocalHeap*, v8::internal::RequestedGCKind) ()',
    '#18 0x000055ac151ed095 in v8::internal::maglev::MaglevCompiler::Compile(v8::internal::LocalIsolate*, v8::internal::maglev::MaglevCompilationInfo*) ()',
  ];
  const running = ['Thread 4 (Thread 0x7f850bf566c0 (LWP 22915) "V8 DefaultWorke"):', '#0  0x000055ac1569d9ff in v8::platform::DefaultJobWorker::Run() ()'];

  it("gives the thread's function names, innermost first", () => {
    expect(threadFrames([...main, '', ...running].join('\n'), '22912')).toBe(
      '#0 cppgc::internal::Sweeper::SweeperImpl::IncrementalSweepTask::~IncrementalSweepTask | #1 v8::platform::DefaultPlatform::PumpMessageLoop | #2 kj::_::Deferred<workerd::IoContext::runImpl',
    );
    expect(threadFrames([...main, '', ...running].join('\n'), '22915')).toBe('#0 v8::platform::DefaultJobWorker::Run');
    expect(threadFrames('', '22912')).toBeUndefined();
  });

  it('names the garbage-collection deadlock when the main thread pumps V8 tasks and a V8 thread waits for a collection', () => {
    expect(threadFrames([...main, '', ...parked].join('\n'), '22912')).toMatch(/PumpMessageLoop .*the deadlock that --single-threaded-gc prevents/);
    expect(threadFrames([...main, '', ...running].join('\n'), '22912')).not.toMatch(/deadlock/);
  });
});
