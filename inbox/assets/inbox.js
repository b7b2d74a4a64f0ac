// The inbox's live updates (served as a file: the page's Content-Security-Policy runs no inline
// script). Everything works without it: the forms are plain forms. With it, the page listens to
// its server-sent events: a call decided, expired or edited elsewhere turns read-only at once,
// saying who decided; new waiting calls are added to the list.
(function () {
  'use strict';
  var body = document.body;
  var source = body.getAttribute('data-events');
  if (!source || !window.EventSource) {
    return;
  }
  var live = document.getElementById('live');

  function shown() {
    var watch = [];
    var seen = {};
    var nodes = document.querySelectorAll('[data-key]');
    for (var i = 0; i < nodes.length; i++) {
      var key = nodes[i].getAttribute('data-key');
      if (seen[key]) {
        continue;
      }
      seen[key] = true;
      var ids = JSON.parse(key);
      ids.push(nodes[i].getAttribute('data-digest') || '');
      watch.push(ids);
    }
    return watch;
  }

  function say(text) {
    if (live) {
      live.textContent = text;
    }
  }

  function close(key, state, text) {
    var nodes = document.querySelectorAll('[data-key]');
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      if (node.getAttribute('data-key') !== key) {
        continue;
      }
      node.classList.add('closed');
      node.setAttribute('data-state', state);
      var actions = node.querySelectorAll('.actions, details.edit');
      for (var j = 0; j < actions.length; j++) {
        var note = document.createElement('p');
        note.className = 'decided-elsewhere';
        note.setAttribute('role', 'status');
        note.textContent = 'Decided elsewhere: ' + text + '.';
        actions[j].replaceWith(note);
      }
      var buttons = node.querySelectorAll('button, input, textarea, select');
      for (var b = 0; b < buttons.length; b++) {
        buttons[b].disabled = true;
      }
      var states = node.querySelectorAll('.state');
      for (var k = 0; k < states.length; k++) {
        states[k].textContent = text;
      }
      var tool = node.querySelector('h2, td a');
      say((tool ? tool.textContent.trim() + ': ' : '') + text);
    }
  }

  var events = new EventSource(source + '&watch=' + encodeURIComponent(JSON.stringify(shown())));
  events.addEventListener('call', function (e) {
    var c = JSON.parse(e.data);
    close(c.key, c.state, c.text);
  });
  events.addEventListener('added', function (e) {
    var a = JSON.parse(e.data);
    var table = document.getElementById('calls');
    if (!table) {
      return;
    }
    var holder = document.createElement('table');
    holder.innerHTML = a.html;
    var groups = Array.prototype.slice.call(holder.tBodies);
    var head = table.tHead;
    for (var i = 0; i < groups.length; i++) {
      if (a.newest && head) {
        head.after(groups[groups.length - 1 - i]);
      } else {
        table.appendChild(groups[i]);
      }
    }
    var count = document.getElementById('count');
    var rows = table.querySelectorAll('tr.call:not(.closed)').length;
    if (count) {
      count.textContent = rows === 1 ? '1 call waits for a person.' : rows + ' calls wait for a person.';
    }
    say(a.count === 1 ? 'A new call waits.' : a.count + ' new calls wait.');
  });
})();
