/**
 * The dispatcher finds a command by its file (cli/shardgate.ts findCommand loads only
 * cli/commands/<name>.ts, so one command's imports are not every command's start-up cost). That
 * every file there is named for its command is checked where all of them are loaded anyway
 * (test/ops/outage.test.ts, each command's --help); here, that nothing else is found.
 */
import { describe, expect, it } from 'vitest';
import { findCommand } from '../../cli/shardgate.ts';

describe('shardgate command lookup', () => {
  it('a name with no file of its own is unknown, paths included', async () => {
    for (const name of ['no-such', '../shardgate', 'commands/status', 'Status', 'status.ts', 'command', ''])
      expect(await findCommand(name), name).toBeUndefined();
  });

  it('a command is found by its name', async () => {
    expect((await findCommand('status'))?.name).toBe('status');
  });
});
