"""One awscli interpreter that runs many commands (test/cli/awscli-driver.ts says why and when).

Requests come as JSON lines on fd 3: {"args": [...], "env": {...}, "cwd": "..."}; each is run
as the `aws` script runs it (awscli.clidriver.main over sys.argv, with that environment and
working directory), its fd 1 and fd 2 redirected to files for the command's
length, so output written through sys.stdout, sys.stdout.buffer or the file descriptor itself
(awscli's binary stdout) is all caught. The answer, one JSON line on fd 4: the exit code and the
two outputs in base64. One command at a time.
"""
import base64
import json
import os
import sys
import tempfile
import time
import traceback

before = dict(os.environ)
import awscli.clidriver  # noqa: E402

# What importing awscli put in the environment (awscli 2.x: AWS_DATA_PATH, where botocore finds
# its models), given to every command on top of its own.
set_by_import = {k: v for k, v in os.environ.items() if before.get(k) != v}

requests = os.fdopen(3, 'rb')
answers = os.fdopen(4, 'wb')


def run(args):
    # As the `aws` script: its locale fix, then awscli's own entry point over sys.argv.
    if os.environ.get('LC_CTYPE', '') == 'UTF-8':
        os.environ['LC_CTYPE'] = 'en_US.UTF-8'
    sys.argv = ['aws', *args]
    try:
        return awscli.clidriver.main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 255


for line in requests:
    req = json.loads(line)
    os.environ.clear()
    os.environ.update(req['env'])
    os.environ.update(set_by_import)
    time.tzset()
    os.chdir(req['cwd'])
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = (os.dup(1), os.dup(2))
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            code = run(req['args'])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        answer = {
            'code': code if isinstance(code, int) else 255,
            'stdout': base64.b64encode(out.read()).decode('ascii'),
            'stderr': base64.b64encode(err.read()).decode('ascii'),
        }
    answers.write(json.dumps(answer).encode('ascii') + b'\n')
    answers.flush()
