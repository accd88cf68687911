/**
 * A bucket's objects: the keys under a prefix as folders (delimiter "/") and files, with
 * breadcrumbs; a filter by key prefix inside the folder (S3's own prefix, so it searches the whole
 * bucket, not just the page shown); pages of S3's continuation tokens, forwards and back, so a
 * bucket of any size is browsed a page at a time; sortable columns (the page shown: S3 lists in
 * key order, so sorting the whole of a large bucket would mean reading all of it); download,
 * delete of many objects and folders at once (a folder: every key under it, up to MAX_FOLDER_KEYS),
 * upload by picker or drag and drop.
 */
import { h, fill, uid } from './dom.ts';
import { bytes, errorText, when } from './format.ts';
import { href } from './route.ts';
import { S3RequestError, type ObjectEntry, type ObjectPage, type VersionPage } from './s3.ts';
import { startingPoints, type Session } from './session.ts';
import { uploads } from './upload.ts';

type Column = 'name' | 'size' | 'modified';

/** The most keys a delete of folders lists and deletes from the browser. */
const MAX_FOLDER_KEYS = 100_000;

export function breadcrumbs(bucket: string, prefix: string, last?: string): HTMLElement {
  const parts = prefix.split('/').filter((p, i, all) => p || i < all.length - 1);
  const crumbs: HTMLElement[] = [h('li', {}, h('a', { href: '#/buckets' }, 'Buckets')), h('li', {}, h('a', { href: href('objects', { bucket }) }, bucket))];
  let at = '';
  for (const p of parts) {
    at += `${p}/`;
    crumbs.push(h('li', {}, h('a', { href: href('objects', { bucket, prefix: at }) }, p || '(empty)')));
  }
  if (last !== undefined) crumbs.push(h('li', {}, h('span', { 'aria-current': 'page' }, last)));
  else crumbs.at(-1)!.querySelector('a')!.setAttribute('aria-current', 'page');
  return h('nav', { 'aria-label': 'Breadcrumb', className: 'crumbs' }, h('ol', {}, crumbs));
}

/** A download by presigned URL (the browser fetches the object itself, at its own pace). */
export async function download(s: Session, bucket: string, key: string, versionId?: string): Promise<void> {
  const url = await s.s3.presignGet(bucket, key, 300, { versionId, attachment: key.split('/').pop() || key });
  const a = h('a', { href: url, download: '' });
  document.body.append(a);
  a.click();
  a.remove();
}

export async function objectsView(s: Session, bucket: string, prefix: string): Promise<HTMLElement> {
  let filter = '';
  let pageSize = 200;
  let tokens: (string | null)[] = [null];
  let pageIndex = 0;
  let page: ObjectPage = { folders: [], objects: [], nextToken: null };
  let sort: { column: Column; ascending: boolean } = { column: 'name', ascending: true };
  const selected = new Set<string>();
  /** Folders selected: deleting one deletes every key under it. */
  const selectedFolders = new Set<string>();

  const status = h('p', { className: 'status', role: 'status', id: uid('objects-status') });
  const problem = h('p', { className: 'error', role: 'alert' });
  const scopeHint = h('p', { className: 'hint' });
  const table = h('table', { className: 'list objects', 'aria-labelledby': 'objects-title', 'aria-describedby': status.id });
  const pager = h('nav', { className: 'pager', 'aria-label': 'Pages' });
  const deleteButton = h('button', { type: 'button', disabled: true, onclick: () => void deleteSelected() }, 'Delete selected');

  /** Listings answered out of order (a filter typed fast) keep only the latest. */
  let loads = 0;
  /** Versions mode: every version and delete marker under the folder, deleted keys included (to restore them). */
  let showVersions = false;
  let versionMarkers: VersionPage['next'][] = [null];
  let versionPage: VersionPage = { versions: [], folders: [], next: null };

  async function load(): Promise<void> {
    const turn = ++loads;
    fill(problem, '');
    fill(scopeHint);
    status.textContent = 'Loading…';
    table.setAttribute('aria-busy', 'true');
    try {
      if (showVersions) {
        const answer = await s.s3.listVersions(bucket, prefix + filter, versionMarkers[pageIndex], { delimiter: '/', maxKeys: pageSize });
        if (turn !== loads) return;
        versionPage = answer;
        selected.clear();
        selectedFolders.clear();
        selectionChanged();
        if (answer.next) versionMarkers[pageIndex + 1] = answer.next;
        else versionMarkers = versionMarkers.slice(0, pageIndex + 1);
        return drawVersions();
      }
      const answer = await s.s3.listObjects(bucket, { prefix: prefix + filter, delimiter: '/', token: tokens[pageIndex], maxKeys: pageSize });
      if (turn !== loads) return;
      page = answer;
      if (page.nextToken) tokens[pageIndex + 1] = page.nextToken;
      else tokens = tokens.slice(0, pageIndex + 1);
      selected.clear();
      selectedFolders.clear();
      selectionChanged();
      draw();
    } catch (err) {
      if (turn !== loads) return;
      status.textContent = '';
      fill(problem, errorText(err));
      // A key scoped to prefixes may not list here, but may list there: say where.
      const elsewhere = startingPoints(s).filter((p) => p.bucket === bucket && p.prefix && p.prefix !== prefix);
      if (err instanceof S3RequestError && err.code === 'AccessDenied' && elsewhere.length)
        fill(
          scopeHint,
          'Your key may list: ',
          elsewhere.flatMap((p, i) => [i ? ', ' : '', h('a', { href: href('objects', { bucket, prefix: p.prefix }) }, `${bucket}/${p.prefix}`)]),
        );
      fill(table);
      fill(pager);
    } finally {
      if (turn === loads) table.removeAttribute('aria-busy');
    }
  }

  const restart = () => {
    tokens = [null];
    versionMarkers = [null];
    pageIndex = 0;
    return load();
  };

  /** The pager under the table: S3's continuation, forwards and back. */
  function drawPager(hasNext: boolean): void {
    fill(
      pager,
      h(
        'button',
        {
          type: 'button',
          disabled: pageIndex === 0,
          onclick: () => {
            pageIndex--;
            void load();
          },
        },
        '‹ Previous page',
      ),
      h('span', { className: 'page-number' }, `Page ${pageIndex + 1}`),
      h(
        'button',
        {
          type: 'button',
          disabled: !hasNext,
          onclick: () => {
            pageIndex++;
            void load();
          },
        },
        'Next page ›',
      ),
    );
  }

  /** Versions mode: one row per version or delete marker, newest first per key, each key linking to its page (restore there). */
  function drawVersions(): void {
    const v = versionPage;
    status.textContent = `Page ${pageIndex + 1}: ${v.folders.length} folder(s), ${v.versions.length} version(s) and delete marker(s)${v.next ? ', more on the next page' : ''}.`;
    const rows: HTMLElement[] = [
      ...v.folders.map((f) =>
        h(
          'tr',
          { className: 'folder', 'data-folder': f },
          h('td', {}, h('a', { href: href('objects', { bucket, prefix: f }), className: 'folder-link' }, f.slice(prefix.length))),
          h('td', {}),
          h('td', { className: 'num' }),
          h('td', {}),
          h('td', {}, 'folder'),
        ),
      ),
      ...v.versions.map((e) =>
        h(
          'tr',
          { 'data-key': e.key, 'data-version': e.versionId, className: e.deleteMarker ? 'marker' : '' },
          h('td', {}, h('a', { href: href('object', { bucket, key: e.key }) }, e.key.slice(prefix.length))),
          h('td', { className: 'mono' }, e.versionId),
          h('td', { className: 'num' }, e.deleteMarker ? '' : bytes(e.size)),
          h('td', {}, when(e.modified)),
          h('td', {}, e.deleteMarker ? 'delete marker' : 'version', e.isLatest ? ' (current)' : ''),
        ),
      ),
    ];
    fill(
      table,
      h('caption', { className: 'visually-hidden' }, `Versions in ${bucket}/${prefix}`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'Version ID', 'Size', 'Last modified', 'Kind'].map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 5, className: 'empty' }, 'No version here.'))),
    );
    drawPager(v.next !== null);
  }

  function sortedObjects(): ObjectEntry[] {
    const dir = sort.ascending ? 1 : -1;
    const by: Record<Column, (a: ObjectEntry, b: ObjectEntry) => number> = {
      name: (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
      size: (a, b) => a.size - b.size,
      modified: (a, b) => a.modified.localeCompare(b.modified),
    };
    return [...page.objects].sort((a, b) => dir * by[sort.column](a, b) || by.name(a, b));
  }

  function header(column: Column, label: string, numeric = false): HTMLElement {
    const active = sort.column === column;
    return h(
      'th',
      { scope: 'col', className: numeric ? 'num' : '', 'aria-sort': active ? (sort.ascending ? 'ascending' : 'descending') : 'none' },
      h(
        'button',
        {
          type: 'button',
          className: 'sort',
          onclick: () => {
            sort = { column, ascending: active ? !sort.ascending : true };
            draw();
            table.querySelector<HTMLButtonElement>(`th[data-column="${column}"] button`)?.focus();
          },
        },
        label,
        active && h('span', { 'aria-hidden': 'true' }, sort.ascending ? ' ▲' : ' ▼'),
      ),
    );
  }

  function draw(): void {
    const started = performance.now();
    const shown = page.folders.length + page.objects.length;
    status.textContent = `Page ${pageIndex + 1}: ${page.folders.length} folder(s), ${page.objects.length} object(s)${page.nextToken ? ', more on the next page' : ''}.`;
    const rows: HTMLElement[] = [];
    const foldersSorted = [...page.folders].sort((a, b) => (sort.column === 'name' && !sort.ascending ? (a < b ? 1 : -1) : a < b ? -1 : 1));
    for (const f of foldersSorted) {
      const name = f.slice(prefix.length);
      const folderBox = h('input', {
        type: 'checkbox',
        checked: selectedFolders.has(f), // kept across a re-sort
        'aria-label': `Select folder ${name}`,
        onchange: () => {
          if (folderBox.checked) selectedFolders.add(f);
          else selectedFolders.delete(f);
          selectionChanged();
        },
      });
      rows.push(
        h(
          'tr',
          { className: 'folder', 'data-folder': f },
          h('td', {}, folderBox),
          h('td', {}, h('a', { href: href('objects', { bucket, prefix: f }), className: 'folder-link' }, name)),
          h('td', { className: 'num' }, ''),
          h('td', {}, ''),
          h('td', {}, 'folder'),
          h('td', {}),
        ),
      );
    }
    for (const o of sortedObjects()) {
      const name = o.key.slice(prefix.length);
      const box = h('input', {
        type: 'checkbox',
        checked: selected.has(o.key), // kept across a re-sort
        'aria-label': `Select ${name}`,
        onchange: () => {
          if (box.checked) selected.add(o.key);
          else selected.delete(o.key);
          selectionChanged();
        },
      });
      rows.push(
        h(
          'tr',
          { 'data-key': o.key },
          h('td', {}, box),
          h('td', {}, h('a', { href: href('object', { bucket, key: o.key }) }, name || '(this prefix)')),
          h('td', { className: 'num', title: `${o.size} bytes` }, bytes(o.size)),
          h('td', {}, when(o.modified)),
          h('td', {}, o.storageClass),
          h('td', {}, h('button', { type: 'button', 'aria-label': `Download ${name}`, onclick: () => void download(s, bucket, o.key) }, 'Download')),
        ),
      );
    }
    const all = h('input', {
      type: 'checkbox',
      'aria-label': 'Select every object on this page',
      onchange: () => {
        for (const b of table.querySelectorAll<HTMLInputElement>('tbody input[type=checkbox]')) {
          b.checked = all.checked;
          b.dispatchEvent(new Event('change'));
        }
      },
    });
    fill(
      table,
      h('caption', { className: 'visually-hidden' }, `Objects in ${bucket}/${prefix}`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, all),
          withColumn(header('name', 'Name'), 'name'),
          withColumn(header('size', 'Size', true), 'size'),
          withColumn(header('modified', 'Last modified'), 'modified'),
          h('th', { scope: 'col' }, 'Class'),
          h('th', { scope: 'col' }, h('span', { className: 'visually-hidden' }, 'Actions')),
        ),
      ),
      h('tbody', {}, shown ? rows : h('tr', {}, h('td', { colspan: 6, className: 'empty' }, filter ? 'No key starts with that.' : 'Empty.'))),
    );
    drawPager(page.nextToken !== null);
    // How long the page took to build and lay out (the layout is forced here, once: the browser does
    // it right after anyway); test/console/console-full.test.ts reports it apart from the listing's time.
    table.getBoundingClientRect();
    table.dataset.drawMs = String(Math.round(performance.now() - started));
  }

  function withColumn(th: HTMLElement, column: Column): HTMLElement {
    th.dataset.column = column;
    return th;
  }

  function selectionChanged(): void {
    const n = selected.size + selectedFolders.size;
    deleteButton.disabled = n === 0;
    deleteButton.textContent = n ? `Delete selected (${n})` : 'Delete selected';
  }

  /** Every key under the selected folders (a listing without delimiter), at most MAX_FOLDER_KEYS. */
  async function keysUnderFolders(): Promise<string[] | null> {
    const keys: string[] = [];
    for (const folder of selectedFolders) {
      let token: string | null = null;
      do {
        const p: ObjectPage = await s.s3.listObjects(bucket, { prefix: folder, token, maxKeys: 1000 });
        keys.push(...p.objects.map((o) => o.key));
        if (keys.length > MAX_FOLDER_KEYS) return null;
        token = p.nextToken;
        status.textContent = `Counting the keys of the selected folders: ${keys.length}…`;
      } while (token);
    }
    return keys;
  }

  async function deleteSelected(): Promise<void> {
    deleteButton.disabled = true;
    let keys = [...selected];
    try {
      const inFolders = await keysUnderFolders();
      if (inFolders === null) {
        fill(problem, `The selected folders hold more than ${MAX_FOLDER_KEYS} keys: delete them with a lifecycle rule or the CLI.`);
        return selectionChanged();
      }
      keys = [...new Set([...keys, ...inFolders])];
    } catch (err) {
      fill(problem, errorText(err));
      return selectionChanged();
    }
    const folders = selectedFolders.size ? ` (${selectedFolders.size} folder(s) with everything in them)` : '';
    if (!keys.length || !confirm(`Delete ${keys.length} object(s)${folders}? In a versioned bucket this adds delete markers; otherwise the data is gone.`))
      return selectionChanged();
    try {
      const failed = await s.s3.deleteObjects(
        bucket,
        keys.map((key) => ({ key })),
      );
      await load();
      if (failed.length) fill(problem, `${failed.length} not deleted: ${failed.map((f) => `${f.key} (${f.code}: ${f.message})`).join('; ')}`);
      else status.textContent = `${keys.length} object(s) deleted. ${status.textContent}`;
    } catch (err) {
      fill(problem, errorText(err));
    }
  }

  const versionsToggle = uid('show-versions');
  const search = h('input', { id: uid('filter'), type: 'search', placeholder: 'name starts with…', spellcheck: 'false', autocomplete: 'off' });
  let typing: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      filter = search.value;
      void restart();
    }, 250);
  });
  const sizeSelect = h(
    'select',
    {
      id: uid('page-size'),
      onchange: () => {
        pageSize = Number(sizeSelect.value);
        void restart();
      },
    },
    [50, 200, 1000].map((n) => h('option', { value: n, selected: n === pageSize }, String(n))),
  );
  const picker = h('input', {
    id: uid('upload'),
    type: 'file',
    multiple: true,
    className: 'visually-hidden',
    onchange: () => {
      if (picker.files?.length) uploads.add(bucket, prefix, [...picker.files]);
      picker.value = '';
    },
  });

  const unfinished = h('details', { className: 'unfinished' }, h('summary', {}, 'Unfinished multipart uploads here'));
  const unfinishedList = h('div');
  unfinished.append(unfinishedList);
  const listUnfinished = async () => {
    try {
      const list = await s.s3.listMultipartUploads(bucket, prefix);
      fill(
        unfinishedList,
        list.length
          ? h(
              'ul',
              {},
              list.map((u) =>
                h(
                  'li',
                  {},
                  `${u.key.slice(prefix.length)} (started ${when(u.initiated)}) `,
                  h(
                    'button',
                    {
                      type: 'button',
                      'aria-label': `Abort the upload of ${u.key}`,
                      onclick: async () => {
                        try {
                          await s.s3.abortMultipart(bucket, u.key, u.uploadId);
                          await listUnfinished();
                        } catch (err) {
                          fill(problem, errorText(err));
                        }
                      },
                    },
                    'Abort',
                  ),
                ),
              ),
            )
          : h('p', { className: 'hint' }, 'None: no upload was left unfinished under this prefix.'),
        h('p', { className: 'hint' }, 'Their parts take space until they are completed or aborted (a lifecycle rule can abort them after some days).'),
      );
    } catch (err) {
      fill(unfinishedList, h('p', { className: 'error' }, errorText(err)));
    }
  };
  unfinished.addEventListener('toggle', () => {
    if (unfinished.open) void listUnfinished();
  });

  const view = h(
    'section',
    { className: 'objects-view', 'aria-labelledby': 'objects-title' },
    breadcrumbs(bucket, prefix),
    h('h2', { id: 'objects-title' }, prefix ? `${bucket}/${prefix}` : bucket),
    h(
      'div',
      { className: 'toolbar', role: 'toolbar', 'aria-label': 'Objects' },
      h(
        'form',
        {
          role: 'search',
          onsubmit: (e: SubmitEvent) => {
            e.preventDefault();
            clearTimeout(typing);
            filter = search.value;
            void restart();
          },
        },
        h('label', { for: search.id }, 'Filter by prefix'),
        search,
      ),
      h('label', { for: sizeSelect.id }, 'Per page'),
      sizeSelect,
      picker,
      h('label', { for: picker.id, className: 'button' }, 'Upload files'),
      deleteButton,
      h('button', { type: 'button', onclick: () => void load() }, 'Refresh'),
      h(
        'span',
        { className: 'check' },
        h('input', {
          id: versionsToggle,
          type: 'checkbox',
          onchange: (e: Event) => {
            showVersions = (e.target as HTMLInputElement).checked;
            void restart();
          },
        }),
        h('label', { for: versionsToggle }, 'Show versions and deleted objects'),
      ),
      h('a', { href: href('settings', { bucket }), className: 'button' }, 'Bucket settings'),
    ),
    h('p', { className: 'drop-hint' }, 'Drop files anywhere on this list to upload them here.'),
    problem,
    scopeHint,
    status,
    table,
    pager,
    unfinished,
  );
  view.addEventListener('dragover', (e) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    view.classList.add('dropping');
  });
  view.addEventListener('dragleave', (e) => {
    if (e.target === view) view.classList.remove('dropping');
  });
  view.addEventListener('drop', (e) => {
    e.preventDefault();
    view.classList.remove('dropping');
    // Files only: a dropped folder is an entry that is not a file (uploading folders is not built).
    const files = [...(e.dataTransfer?.items ?? [])]
      .filter((i) => i.kind === 'file' && i.webkitGetAsEntry()?.isFile !== false)
      .map((i) => i.getAsFile())
      .filter((f): f is File => f !== null);
    if (files.length) uploads.add(bucket, prefix, files);
  });
  uploads.onStored = (b, key) => {
    if (b === bucket && key.startsWith(prefix) && view.isConnected) void load();
  };
  await load();
  return view;
}
