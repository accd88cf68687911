/**
 * The shardgate web console (issue 45; docs/CONSOLE.md): a single-page app served by the gateway
 * at /_shardgate/console, talking only to this gateway's S3 API (and its whoami), every request
 * signed here with the key the user typed. This file: the frame (header, sign-in, the view the
 * fragment names); the views live in files of their own.
 */
import { h, fill, byId } from './dom.ts';
import { errorText } from './format.ts';
import { bucketsView } from './buckets.ts';
import { objectsView } from './objects.ts';
import { objectView } from './object.ts';
import { settingsView } from './settings.ts';
import { healthView } from './health.ts';
import { currentPlace } from './route.ts';
import { uploads } from './upload.ts';
import { rememberedKey, session, signIn, signOut, type Session } from './session.ts';

const app = byId('app');

function header(s: Session | null): HTMLElement {
  return h(
    'header',
    { className: 'top' },
    h('h1', {}, h('a', { href: '#/buckets' }, 'shardgate'), ' console'),
    s && h('nav', { 'aria-label': 'Console' }, h('a', { href: '#/buckets' }, 'Buckets'), s.admin && h('a', { href: '#/health' }, 'Health')),
    h('span', { className: 'spacer' }),
    s &&
      h(
        'span',
        { className: 'who', 'data-testid': 'who' },
        'Signed in as ',
        h('strong', {}, s.accessKeyId),
        s.admin ? ' (admin)' : s.grants.some((g) => g.prefixes?.length) ? ' (scoped)' : '',
      ),
    s &&
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            uploads.stopAll();
            signOut();
            render();
          },
        },
        'Sign out',
      ),
  );
}

function signInView(problem?: string): HTMLElement {
  const id = h('input', { id: 'key-id', name: 'accessKeyId', autocomplete: 'username', required: true, spellcheck: 'false', autocapitalize: 'off' });
  const secret = h('input', { id: 'key-secret', name: 'secretAccessKey', type: 'password', autocomplete: 'current-password', required: true });
  const remember = h('input', { id: 'remember', type: 'checkbox' });
  const status = h('p', { className: 'error', role: 'alert', id: 'signin-error' }, problem ?? '');
  const submit = h('button', { type: 'submit', className: 'primary' }, 'Sign in');
  const form = h(
    'form',
    {
      className: 'signin',
      'aria-labelledby': 'signin-title',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        submit.disabled = true;
        fill(status, '');
        try {
          await signIn({ accessKeyId: id.value.trim(), secretAccessKey: secret.value }, remember.checked);
          secret.value = '';
          render();
        } catch (err) {
          fill(status, `Sign-in refused: ${errorText(err)}`);
          submit.disabled = false;
          secret.focus();
        }
      },
    },
    h('h2', { id: 'signin-title' }, 'Sign in with an access key'),
    h('p', { className: 'hint' }, 'Every request is signed in this browser with your key: you see and do exactly what the key may, nothing more.'),
    h('label', { for: 'key-id' }, 'Access key ID'),
    id,
    h('label', { for: 'key-secret' }, 'Secret access key'),
    secret,
    h(
      'div',
      { className: 'check' },
      remember,
      h('label', { for: 'remember' }, 'Remember this key in this browser (stored in localStorage until you sign out)'),
    ),
    status,
    submit,
  );
  queueMicrotask(() => id.focus());
  return form;
}

let rendering = 0;

/** Draws the screen the fragment names; `moved`: the user went there, so the focus goes to its heading (as a page load would put it at the top). */
async function render(moved = false): Promise<void> {
  const turn = ++rendering;
  const s = session();
  const main = h('main', { id: 'main' });
  if (!s) {
    fill(app, header(s), main);
    fill(main, signInView());
    return;
  }
  uploads.restore(s.accessKeyId);
  fill(app, header(s), uploads.panel, main);
  const place = currentPlace();
  try {
    const view =
      place.view === 'objects' && place.bucket
        ? objectsView(s, place.bucket, place.prefix)
        : place.view === 'object' && place.bucket && place.key
          ? objectView(s, place.bucket, place.key)
          : place.view === 'settings' && place.bucket
            ? settingsView(s, place.bucket)
            : place.view === 'health' && s.admin
              ? healthView(s)
              : bucketsView(s);
    if (turn === rendering) fill(main, await view);
  } catch (err) {
    if (turn === rendering) fill(main, h('p', { className: 'error', role: 'alert' }, errorText(err)));
  }
  if (turn === rendering) {
    document.body.dataset.view = place.view;
    const heading = main.querySelector<HTMLElement>('h2');
    heading?.setAttribute('tabindex', '-1');
    if (moved) heading?.focus();
  }
}

window.addEventListener('hashchange', () => void render(true));

async function boot(): Promise<void> {
  const remembered = rememberedKey();
  if (remembered) {
    try {
      await signIn(remembered, true);
    } catch (err) {
      signOut();
      fill(app, header(null), h('main', { id: 'main' }, signInView(`The remembered key was refused (${errorText(err)}); it is forgotten.`)));
      return;
    }
  }
  await render();
}

void boot();
